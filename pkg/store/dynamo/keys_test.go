package dynamo

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// TestItemKindOf: every key the store builds is of its kind, whatever the
// ordinal.
func TestItemKindOf(t *testing.T) {
	tests := map[string]ItemKind{
		sessionSK:                                   ItemSession,
		TurnSortKey(7):                              ItemTurn,
		sortKey(liveKey("s", 7)):                    ItemLive,
		sortKey(deltaKey("s", 7, 12)):               ItemDelta,
		TurnSortKey(7) + chunkInfix + "save-1#0003": ItemChunk,
		TurnSortKey(999_999_999_999):                ItemTurn,
		"TURN#12":                                   "",
		"OTHER":                                     "",
		TurnSortKey(7) + "#SOMETHING":               "",
	}
	tests[sortKey(ledgerKey(chat.Principal{Subject: "ann", Tenant: "t1"}, time.Now()))] = ItemLedger
	tests[sortKey(attachmentKey("s", "att_ABC"))] = ItemAttachment
	tests[sortKey(countedItemKey(chat.Principal{Subject: "ann", Tenant: "t1"}, time.Now(), chat.SessionMarker("s1")))] = ItemLedger
	for sk, want := range tests {
		if got := ItemKindOf(sk); got != want {
			t.Errorf("ItemKindOf(%q) = %q, want %q", sk, got, want)
		}
	}
	if id, ok := SessionIDOf(SessionPartitionKey("s1")); !ok || id != "s1" {
		t.Errorf("SessionIDOf = %q, %v", id, ok)
	}
	if _, ok := SessionIDOf("BENCH#x"); ok {
		t.Error("SessionIDOf accepted a key of no session")
	}
}
