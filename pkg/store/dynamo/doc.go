// Package dynamo implements chat.Store on one DynamoDB table, written only
// with conditional writes and without transactions (DESIGN §5). It is the
// only package that imports the DynamoDB SDK.
//
// Layout (key attributes pk, sk; names in table.go):
//
//	session item  pk=SESSION#<id>  sk=SESSION
//	  ownerKey, definitionId, definitionRevision, cursor, nextOrdinal,
//	  revision, createdAt, updatedAt (epoch ms), the lease (leaseTurnId,
//	  leaseToken, leaseExpiresAt in epoch ms, leaseStop, leaseOrdinal,
//	  leaseInputHash, leaseLineage; absent when idle), the terminal window
//	  (window: list of {turnId, outcome, inputHash}, oldest first, and
//	  windowIds: the same turn ids as a string set for claim conditions) and
//	  releasedToken (the token of the last release, for idempotent retries).
//	turn item     pk=SESSION#<id>  sk=TURN#<ordinal, 12 digits>
//	  turnId (TurnIDIndex), visibleKey (VisibleIndex, absent once
//	  superseded), ordinal, status, lineage, inputHash, usage, error,
//	  artifacts, superseded, firstSequence, lastSequence, startedAt,
//	  completedAt, savedAt, ownerKey (denormalised from the session),
//	  leaseToken (of the save), and the canonical messages as JSON
//	  (messages), gzip-compressed JSON (messagesGzip) or, when even that
//	  exceeds 350 KB, a chunk count (chunks) and chunk key prefix.
//	chunk item    pk=SESSION#<id>  sk=TURN#<ordinal>#CHUNK#<token hash>#<n>
//	  chunk (B): one part of a large turn's compressed messages.
//
// Request budgets (DESIGN §5), each measured by this package's tests: a
// claim is one conditional UpdateItem that creates or claims the session;
// only a rejected claim adds one consistent GetItem to classify it (or uses
// the item returned with the failed condition where the server supports
// ReturnValuesOnConditionCheckFailure), and a takeover from a crashed
// turn adds a compare-and-set on the session revision. Lease renewal,
// release and save are one write each; a history page and a context load
// are one Query of the sparse VisibleIndex; FindTurn is one Query of
// TurnIDIndex; an artifacts write is that Query plus one UpdateItem.
//
// A Store remembers, per lease token, what its claim returned: the owner
// (SaveTurn stores it on the turn item) and the terminal window (Release
// computes the new window from it; the window cannot change while the
// lease is held). A save or release through another Store instance reads
// the session first (one more request) and is otherwise the same.
//
// Condition expressions are written by hand (condition.go) without the
// expression builder's redundant parentheses, which dynalite parses
// several times slower; update and key-condition expressions use the
// builder.
package dynamo
