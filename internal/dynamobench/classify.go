package dynamobench

import (
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// What a DynamoDB call of a turn request is for, from its request
// (Classify): the claim's phase (KindClaim: the claim's UpdateItem, a
// takeover's fence of the crashed turn and its compare-and-set, a
// give-back, the turn id lookup of a full window), the context load,
// renewals, the save, the release, a running turn's checkpoints;
// KindRead is a consistent GetItem (the read that classifies a failed
// condition or resolves an unknown outcome).
const (
	KindClaim   = "claim"
	KindContext = "context"
	KindRenew   = "renew"
	KindSave    = "save"
	// KindDecide is deciding a turn whose lease expired (docs/durable-turns.md):
	// the session, live and turn fences, and the write that frees the
	// session.
	KindDecide  = "decide"
	KindRelease = "release"
	// KindCheckpoint is a checkpoint of a running turn (its live item,
	// deltas, running turn item), where the store has them.
	KindCheckpoint = "checkpoint"
	KindRead       = "read"
	// KindUsage is a call on a usage ledger item (docs/quotas.md): the
	// three writes that count a turn (LedgerWrite, LedgerSettle,
	// LedgerClear), an admission's write or its cancellation
	// (AdmissionWrite), and every read of a ledger item (a count's, the
	// quota check's, a write's resolving read) or partition (a tenant's
	// figures).
	KindUsage = "usage"
	KindOther = "other"
)

// The writes of KindUsage (Purpose.Write).
const (
	// LedgerWrite is a count's add, the one write of a count that changes
	// the counters: the month item's counters ADDed and the session's
	// journal entry set, conditional on that entry being below the
	// turn's ordinal and on the item's generation (an SDK retry of an
	// applied add fails its own condition).
	LedgerWrite = "ledger write"
	// LedgerSettle is a count's settle: the session's counted item set to
	// the ordinal, conditional on it being below it. It counts nothing.
	LedgerSettle = "ledger settle"
	// LedgerClear is a count's clear: the journal entry removed and the
	// generation moved on, conditional on the entry holding the ordinal.
	// It counts nothing, and its failure fails no count (the session's
	// next count clears the entry).
	LedgerClear = "ledger clear"
	// AdmissionWrite records an admission (rate and concurrency quotas)
	// or forgets one that was given back.
	AdmissionWrite = "admission write"
)

// The writes of KindClaim, told apart where it matters (Purpose.Write).
const (
	// ClaimWrite is the claim's own UpdateItem.
	ClaimWrite = "claim write"
	// TakeoverWrite is a takeover's compare-and-set that claims.
	TakeoverWrite = "takeover write"
	// TakeoverRecord is a takeover's compare-and-set that records the
	// crashed turn and claims nothing (the turn id was rejected).
	TakeoverRecord = "takeover record"
	// GiveBackWrite undoes a claim that must not run (a rejected replay,
	// or a turn id lookup that failed): the lease and the ordinal return.
	GiveBackWrite = "give back"
)

// Purpose is what Classify reads of a call.
type Purpose struct {
	// SK is the sort key of a keyed call, "" for a Query.
	SK   string
	Kind string
	// Write tells the claim's writes, and the usage ledger's, apart; ""
	// for other calls.
	Write string
	// Expiry is the lease expiry a claim or a renewal writes (zero for
	// other calls, or when it cannot be read from the request).
	Expiry time.Time
}

// Classify reads what a call is for from its request: the item's kind
// (dynamo.ItemKindOf), the store's condition expressions, whose attribute
// names are written out by hand (#name), and the update expression's
// names, which come from the SDK's builder (#0, #1).
func Classify(r Request) Purpose {
	p := Purpose{SK: r.SK}
	item, cond := dynamo.ItemKindOf(r.SK), r.Condition
	switch r.Op {
	case "UpdateItem":
		switch {
		case item == dynamo.ItemLedger && strings.Contains(cond, "#journal < :ordinal"):
			p.Kind, p.Write = KindUsage, LedgerWrite
		case item == dynamo.ItemLedger && strings.Contains(cond, "#c < :ordinal"):
			p.Kind, p.Write = KindUsage, LedgerSettle
		case item == dynamo.ItemLedger && strings.Contains(cond, "#journal = :ordinal"):
			p.Kind, p.Write = KindUsage, LedgerClear
		case item == dynamo.ItemLedger:
			p.Kind, p.Write = KindUsage, AdmissionWrite
		case item == dynamo.ItemSession && strings.Contains(cond, "attribute_not_exists(#leaseToken)"):
			p.Kind, p.Write = KindClaim, ClaimWrite
		case item == dynamo.ItemSession && strings.Contains(cond, ":revision") && slices.Contains(r.Names, "fencedToken") && r.LeaseExpiresAt.IsZero():
			p.Kind = KindDecide // the decision's last write: the session freed
		case item == dynamo.ItemSession && strings.Contains(cond, ":revision"):
			p.Kind, p.Write = KindClaim, TakeoverWrite
		case item == dynamo.ItemSession && slices.Contains(r.Names, "releasedToken"):
			p.Kind = KindRelease
		case item == dynamo.ItemSession && strings.Contains(cond, ":now") && strings.Contains(cond, "#leaseToken = :token"):
			p.Kind = KindRenew
		case item == dynamo.ItemSession && strings.Contains(cond, "#leaseToken = :token"):
			p.Kind, p.Write = KindClaim, GiveBackWrite
		case strings.Contains(cond, ":crashed") || strings.Contains(cond, ":fence") || strings.Contains(cond, "#leaseExpiresAt <="):
			p.Kind = KindDecide // the session, live and turn fences of a dead turn
		case item == dynamo.ItemTurn && strings.Contains(cond, ":saveId"):
			p.Kind = KindSave
		case item == dynamo.ItemLive || strings.Contains(cond, ":running"):
			p.Kind = KindCheckpoint // the live item, or the running turn item a checkpoint writes
		default:
			p.Kind = KindOther
		}
		if p.Write == ClaimWrite || p.Write == TakeoverWrite || p.Kind == KindRenew {
			p.Expiry = r.LeaseExpiresAt
		}
		if p.Write == TakeoverWrite && p.Expiry.IsZero() {
			p.Write = TakeoverRecord // it writes no lease
		}
	case "GetItem", "BatchGetItem":
		p.Kind = KindRead
		switch item {
		case dynamo.ItemLive, dynamo.ItemDelta:
			p.Kind = KindCheckpoint
		case dynamo.ItemLedger:
			p.Kind = KindUsage
		}
	case "PutItem":
		switch item {
		case dynamo.ItemLive, dynamo.ItemDelta:
			p.Kind = KindCheckpoint // a checkpoint's delta
		case dynamo.ItemChunk:
			p.Kind = KindSave
		default:
			p.Kind = KindOther
		}
	case "DeleteItem":
		p.Kind = KindOther
	case "Query":
		p.SK = ""
		switch {
		case dynamo.IsLedgerPartition(r.PK):
			p.Kind = KindUsage // a tenant's figures
		case r.Index == dynamo.VisibleIndex:
			p.Kind = KindContext // the context load (history pages are other requests)
		case r.Index == dynamo.TurnIDIndex:
			p.Kind = KindClaim // the turn id lookup of a full window
		default:
			p.Kind = KindOther // a chunked turn's chunks, a crashed turn's checkpoints
		}
	default:
		p.SK, p.Kind = "", KindOther
	}
	return p
}
