package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// attachmentCases prove UseAttachments (docs/attachments.md): one upload
// goes with one turn, its replays and the turns that replace it.
func attachmentCases() map[string]func(*testing.T, *env) {
	use := func(e *env, sessionID, turnID, parent string, ids ...string) error {
		return e.store.UseAttachments(e.ctx, chat.UseAttachmentsRequest{SessionID: sessionID, TurnID: turnID,
			ParentTurnID: parent, AttachmentIDs: ids, Until: e.clock.Now().Add(24 * time.Hour)})
	}
	ok := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	used := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, chat.ErrAttachmentUsed) {
			t.Fatalf("%s: %v, want ErrAttachmentUsed", what, err)
		}
	}
	return map[string]func(*testing.T, *env){
		"OneTurnAndItsReplays": func(t *testing.T, e *env) {
			ok(t, "t1 uses a and b", use(e, "s1", "t1", "", "att_A", "att_B"))
			ok(t, "t1 again (a replay)", use(e, "s1", "t1", "", "att_A", "att_B"))
			ok(t, "t1 with one of them", use(e, "s1", "t1", "", "att_B"))
			used(t, "t2 uses b", use(e, "s1", "t2", "", "att_B"))
			ok(t, "t2 uses another", use(e, "s1", "t2", "", "att_C"))
		},

		"RefusalTakesBackTheCallsOthers": func(t *testing.T, e *env) {
			ok(t, "t1 uses a", use(e, "s1", "t1", "", "att_A"))
			used(t, "t2 uses c, then a", use(e, "s1", "t2", "", "att_C", "att_A"))
			ok(t, "t3 uses c, which t2's refusal gave back", use(e, "s1", "t3", "", "att_C"))
			used(t, "t2 uses c after t3", use(e, "s1", "t2", "", "att_C"))
		},

		"LineageKeepsTheParentsFiles": func(t *testing.T, e *env) {
			ok(t, "t1 uses a", use(e, "s1", "t1", "", "att_A"))
			ok(t, "t2 replaces t1 with a", use(e, "s1", "t2", "t1", "att_A"))
			ok(t, "t3 replaces t2 with a", use(e, "s1", "t3", "t2", "att_A"))
			ok(t, "t1 again (a replay)", use(e, "s1", "t1", "", "att_A"))
			used(t, "t4 replaces an unrelated turn", use(e, "s1", "t4", "t9", "att_A"))
		},

		"PerSession": func(t *testing.T, e *env) {
			ok(t, "s1 t1 uses a", use(e, "s1", "t1", "", "att_A"))
			ok(t, "s2 t2 uses a (another session's id)", use(e, "s2", "t2", "", "att_A"))
		},

		"ConcurrentUsesOneWinner": func(t *testing.T, e *env) {
			const n = 8
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { errs[i] = use(e, "s1", "t"+string(rune('a'+i)), "", "att_A") })
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, chat.ErrAttachmentUsed):
					t.Errorf("a use failed: %v", err)
				}
			}
			if won != 1 {
				t.Errorf("%d turns use the attachment, want 1", won)
			}
		},

		"DeletedSessionForgets": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			ok(t, "t1 uses a", use(e, "s1", "t1", "", "att_A"))
			deletes{e}.deleteAll(alice, "s1")
			ok(t, "a turn of the session made again uses a", use(e, "s1", "t2", "", "att_A"))
		},

		"BadRequest": func(t *testing.T, e *env) {
			if err := use(e, "", "t1", "", "att_A"); !errors.Is(err, chat.ErrInvalidRequest) {
				t.Errorf("no session id: %v, want ErrInvalidRequest", err)
			}
			if err := use(e, "s1", "", "", "att_A"); !errors.Is(err, chat.ErrInvalidRequest) {
				t.Errorf("no turn id: %v, want ErrInvalidRequest", err)
			}
		},
	}
}
