package dynamo

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's keys as the store writes them (the layout in the package
// documentation), for code that reads the store's traffic, such as
// internal/dynamobench: derived here from the functions that build the
// keys, so that a change of the layout changes them too.

// ItemKind is the kind of a table item, by its sort key (ItemKindOf).
type ItemKind string

// Item kinds.
const (
	ItemSession ItemKind = "session"
	ItemTurn    ItemKind = "turn"
	// ItemLive and ItemDelta are a running turn's checkpoint items.
	ItemLive  ItemKind = "live"
	ItemDelta ItemKind = "delta"
	// ItemChunk is one part of a large turn's compressed messages.
	ItemChunk ItemKind = "chunk"
	// ItemLedger is a principal's usage ledger item of one month, or a
	// session's counted item beside it (ledger.go).
	ItemLedger ItemKind = "ledger"
	// ItemAttachment records the turns that used an attachment
	// (attachments.go).
	ItemAttachment ItemKind = "attachment"
)

// SessionSortKey is the sort key of a session item.
const SessionSortKey = sessionSK

// SessionPartitionKey returns the partition key of sessionID's items.
func SessionPartitionKey(sessionID string) string { return sessionPK(sessionID) }

// SessionIDOf returns the session id of a partition key, and false for a
// key that names no session.
func SessionIDOf(pk string) (string, bool) { return strings.CutPrefix(pk, sessionPK("")) }

// TurnSortKey returns the sort key of the turn item of ordinal (>= 1).
func TurnSortKey(ordinal int64) string { return turnSK(ordinal) }

// OrdinalKey returns the zero-padded ordinal a turn item's VisibleIndex
// key (AttrVisibleKey) holds.
func OrdinalKey(ordinal int64) string { return ordinalKey(ordinal) }

// IsLedgerPartition reports whether pk is a usage ledger partition (a
// tenant's principals of one month).
func IsLedgerPartition(pk string) bool { return strings.HasPrefix(pk, ledgerPrefix) }

// IsWithdrawnClaim reports whether item, a turn item (ItemTurn), is the
// hidden record a withdrawn claim leaves at its ordinal
// (Store.WithdrawClaim): the ordinal was claimed, but no turn ran under
// it and no reader lists it.
func IsWithdrawnClaim(item map[string]types.AttributeValue) bool {
	return strings.HasPrefix(tokenOf(item), withdrawnPrefix)
}

// ItemKindOf returns the kind of the item whose sort key is sk, and ""
// for a sort key the store never writes.
func ItemKindOf(sk string) ItemKind {
	if sk == sessionSK {
		return ItemSession
	}
	if strings.HasPrefix(sk, ledgerSKPrefix) || strings.HasPrefix(sk, countedSKPrefix) {
		return ItemLedger
	}
	if strings.HasPrefix(sk, attachmentPrefix) {
		return ItemAttachment
	}
	if len(sk) < len(turnKeyShape) || !strings.HasPrefix(sk, turnPrefix) {
		return ""
	}
	switch rest := sk[len(turnKeyShape):]; { // what follows TURN#<ordinal>
	case rest == "":
		return ItemTurn
	case rest == liveKeyRest:
		return ItemLive
	case strings.HasPrefix(rest, deltaKeyRest):
		return ItemDelta
	case strings.HasPrefix(rest, chunkInfix):
		return ItemChunk
	}
	return ""
}

// What follows a turn item's sort key in a live item's and (before its
// number) in a delta item's.
var (
	turnKeyShape = turnSK(0)
	liveKeyRest  = strings.TrimPrefix(sortKey(liveKey("", 0)), turnKeyShape)
	deltaKeyRest = strings.TrimRight(strings.TrimPrefix(sortKey(deltaKey("", 0, 0)), turnKeyShape), "0123456789")
)

// chunkInfix follows the turn item's sort key in a chunk item's
// (turns.go's ChunkPrefix).
const chunkInfix = "#CHUNK#"

// sortKey returns the sort key of key.
func sortKey(key map[string]types.AttributeValue) string {
	s, _ := key[AttrSK].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}
