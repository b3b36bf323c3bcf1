package benchwire

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// NewID returns a random id shaped like a UUID (8-4-4-4-12 hex digits),
// for the sessions and turns of a measurement.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// AwaitFree waits, reading through store (unmetered), until p's session
// sid holds no lease and no queued turn: its last release and drain are
// done. It gives up after a minute, or when ctx ends.
func AwaitFree(ctx context.Context, store chat.Store, sid string, p chat.Principal) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		s, err := store.GetSession(ctx, sid, p)
		if err == nil && s.ActiveTurn == nil && len(s.Queue) == 0 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("session %s still busy after a minute", sid)
}
