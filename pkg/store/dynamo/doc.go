// Package dynamo implements chat.Store on one DynamoDB table, written only
// with conditional writes and without transactions
// (docs/design.md#storage-one-dynamodb-table). It is the only package under
// pkg/ that imports the DynamoDB SDK (service/dynamodb and its types, and
// feature/dynamodb); the only other importer is internal/dynamobench, the
// benchmark and check rig that observes, meters and shapes the store's
// traffic (cmd/turnbench, internal/loadcheck and the store's budget tests
// use it instead of the SDK). docs/architecture.md has the import graph.
//
// Layout (key attributes pk, sk; names in table.go; keys.go gives the
// key shapes to code that reads the store's traffic):
//
//	session item  pk=SESSION#<id>  sk=SESSION
//	  ownerKey, definitionId, definitionRevision, sequence (the last
//	  issued), nextOrdinal, revision, createdAt, updatedAt (epoch ms), the
//	  lease (leaseTurnId, leaseToken, leaseExpiresAt in epoch ms, leaseStop,
//	  leaseOrdinal, leaseInputHash, leaseLineage; absent when idle), the
//	  terminal window (window: a map from turn id to "<position><outcome
//	  letter><input hash>", position 0 the oldest, outcome c or i, the hash
//	  in unpadded base64url; at most Options.TerminalWindow entries),
//	  releasedToken (the token of the last release, for idempotent
//	  retries), the confirmations (a map by token), the queue (queue: a
//	  map from the base64url turn id to "<seq>|<queuedAt>|<expiresAt>|
//	  <started ordinal>|<flags>|<input hash>", queue.go; queueSeq) and,
//	  while a dead turn's fate is being decided, fencedToken (fate.go).
//	  Every claim and release rewrites it: it stays small (the queue holds
//	  at most chat.MaxQueuedTurnsLimit entries of ~80 bytes).
//	turn item     pk=SESSION#<id>  sk=TURN#<ordinal, 12 digits>
//	  turnId (TurnIDIndex, projecting TurnIDIndexAttributes), visibleKey
//	  (VisibleIndex, projecting all; absent once
//	  superseded), ordinal, status, lineage, inputHash, usage, error,
//	  artifacts, superseded, firstSequence, lastSequence, startedAt,
//	  completedAt, savedAt, ownerKey (denormalised from the session),
//	  leaseToken (of the save, or "fence:..." once a takeover closed a
//	  crashed turn), saveId (random per save), and the canonical messages as JSON
//	  (messages), gzip-compressed JSON (messagesGzip) or, when even that
//	  exceeds 350 KB, a chunk count (chunks) and chunk key prefix.
//	fence item    pk=SESSION#<id>  sk=TURN#<ordinal>: a crashed turn that
//	  saved nothing: leaseToken "fence:...", status error, error TURN_LOST,
//	  its turnId and inputHash (so that TurnIDIndex keeps the id taken) but
//	  no saveId, no live flag and no visibleKey: no reader shows it.
//	chunk item    pk=SESSION#<id>  sk=TURN#<ordinal>#CHUNK#<save id>#<n>
//	  chunk (B): one part of a large turn's compressed messages.
//	live item     pk=SESSION#<id>  sk=TURN#<ordinal>#LIVE
//	  a running turn's checkpoint head (checkpoint.go): leaseToken (every
//	  update is conditional on it, so the decision's fence stops it), the
//	  head (the sequence of the last checkpoint, whose delta chain readers
//	  fold), usage of the checkpointed snapshot, leaseExpiresAt, stop (a
//	  stop request), purgeAt.
//	delta item    pk=SESSION#<id>  sk=TURN#<ordinal>#D#<sequence, 16 digits>
//	  what a checkpoint changed since the one it names as prior (JSON),
//	  purgeAt. A running turn's first checkpoint writes its turn item
//	  (status running, live set) and its live item; each later one writes
//	  a delta and moves the live item's head; the final save rewrites the
//	  turn item whole and clears live, and the live and delta items
//	  expire. Neither carries an index key: a checkpoint costs no index
//	  write.
//	queue item    pk=SESSION#<id>  sk=QUEUE#<turnId>
//	  a queued turn's user message, lineage, input hash and times
//	  (queue.go); its order is the session item's queue entry.
//	ledger item   pk=USAGE#<tenant key>#<yyyy-mm>  sk=P#<principal key>
//	  one principal's usage ledger of a UTC month (ledger.go): its
//	  counters, each session's last counted ordinal, its quota admissions,
//	  tenant and subject in clear, purgeAt. No index key.
//
// Request budgets, each measured by this package's tests: a claim is one
// conditional UpdateItem that creates or claims the session; only a
// rejected claim adds one consistent GetItem to classify it (or uses the
// item returned with the failed condition where the server supports
// ReturnValuesOnConditionCheckFailure), and a takeover from a crashed turn
// adds the fence of its turn item and a compare-and-set on the session
// revision. Once the terminal window is full (Options.TerminalWindow,
// default chat.DefaultTerminalWindow), a claim adds one Query of
// TurnIDIndex, since its turn id may have left the window. Lease renewal,
// release and save are one write each; a history page and a context load
// are one Query of the sparse VisibleIndex; FindTurn is one Query of
// TurnIDIndex; an artifacts write is that Query plus one UpdateItem;
// counting a turn in the usage ledger is one UpdateItem, reading a
// principal's usage one GetItem (a BatchGetItem in a month's first hour).
//
// A Store keeps no per-lease state: the calls of a lease take the Claim
// that ClaimTurn returned (owner, ordinal, token, terminal window), so
// every process serving the table behaves the same, and the fencing of a
// crashed turn's late save is enforced by the table (a takeover rewrites
// the crashed turn's item under a fence token).
//
// Faults. Any write may apply and lose its answer (the SDK then retries
// the same request), answer 500 after applying, or hang. Every write is
// conditional and recognises its own effect: a claim by the lease token
// it wrote, a save by its save id, a release by the released token, a
// renewal by the expiry it wrote. When a write fails without a condition
// failure, one consistent read resolves whether it applied before the
// caller is told. The write runs under a context that ends
// Options.ResolveShare before the caller's deadline so that the read still
// fits; ClientOptions.AttemptTimeout bounds each HTTP attempt, so a hung
// connection costs one attempt, not the whole budget.
//
// Condition expressions are written by hand (condition.go) without the
// expression builder's redundant parentheses, which dynalite parses
// several times slower; update and key-condition expressions use the
// builder.
package dynamo
