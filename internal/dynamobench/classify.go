package dynamobench

import (
	"time"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// What a DynamoDB call of a turn request is for, from the store's label
// of it (Classify): the claim's phase (KindClaim: the claim's UpdateItem, a
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

// The writes of KindUsage (Class.Write).
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

// The writes of KindClaim, told apart where it matters (Class.Write).
const (
	// ClaimWrite is the claim's own UpdateItem (or a queued turn's).
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

// Class is what Classify reads of a call: its kind, and which write it is.
type Class struct {
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

// Classify reads what a call is for from the purpose the store labelled
// it with (Request.Purpose), and, for reads, from the kind of the item it
// reads (dynamo.ItemKindOf). A call without a label (a store older than
// the labels, or a call made outside a store) is KindOther when it writes
// or queries and KindRead when it reads an item.
func Classify(r Request) Class {
	p := Class{SK: r.SK}
	switch r.Op {
	case "UpdateItem", "PutItem", "DeleteItem":
		p.Kind, p.Write = writeKind(r)
		if p.Write == ClaimWrite || p.Write == TakeoverWrite || p.Kind == KindRenew {
			p.Expiry = r.LeaseExpiresAt
		}
	case "GetItem", "BatchGetItem":
		p.Kind = KindRead
		switch dynamo.ItemKindOf(r.SK) {
		case dynamo.ItemLive, dynamo.ItemDelta:
			p.Kind = KindCheckpoint
		case dynamo.ItemLedger:
			p.Kind = KindUsage
		}
	case "Query":
		p.SK = ""
		switch r.Purpose {
		case dynamo.PurposeLedgerRead:
			p.Kind = KindUsage // a tenant's figures
		case dynamo.PurposeContext:
			p.Kind = KindContext
		case dynamo.PurposeLookup:
			p.Kind = KindClaim // the turn id lookup of a full window
		default:
			p.Kind = KindOther // history pages, a chunked turn's chunks, a crashed turn's checkpoints
		}
	default:
		p.SK, p.Kind = "", KindOther
	}
	return p
}

// writeKind is the kind (and, for claims and the ledger, the write) of a
// write labelled r.Purpose.
func writeKind(r Request) (kind, write string) {
	switch r.Purpose {
	case dynamo.PurposeClaim, dynamo.PurposeDequeue:
		return KindClaim, ClaimWrite
	case dynamo.PurposeTakeover:
		return KindClaim, TakeoverWrite
	case dynamo.PurposeTakeoverRecord:
		return KindClaim, TakeoverRecord
	case dynamo.PurposeGiveBack:
		return KindClaim, GiveBackWrite
	case dynamo.PurposeWithdraw:
		if dynamo.ItemKindOf(r.SK) == dynamo.ItemSession {
			return KindClaim, GiveBackWrite // the withdrawn claim's lease removed
		}
		return KindOther, "" // the turn item voided
	case dynamo.PurposeRenew:
		return KindRenew, ""
	case dynamo.PurposeAck, dynamo.PurposeDelta, dynamo.PurposeLive:
		return KindCheckpoint, ""
	case dynamo.PurposeSave:
		if r.Op == "DeleteItem" {
			return KindOther, "" // a failed save's chunks removed
		}
		return KindSave, ""
	case dynamo.PurposeRelease:
		return KindRelease, ""
	case dynamo.PurposeFence, dynamo.PurposeFenceRecord, dynamo.PurposeFree:
		return KindDecide, ""
	case dynamo.PurposeLedgerAdd:
		return KindUsage, LedgerWrite
	case dynamo.PurposeLedgerSettle:
		return KindUsage, LedgerSettle
	case dynamo.PurposeLedgerClear:
		return KindUsage, LedgerClear
	case dynamo.PurposeAdmission, dynamo.PurposeAdmissionCancel:
		return KindUsage, AdmissionWrite
	}
	return KindOther, "" // stops, abandons, supersessions, artifacts, the queue's writes
}
