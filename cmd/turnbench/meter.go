package main

import (
	"errors"
	"net/http"
	"sync/atomic"
	"unicode/utf8"

	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// meter accounts each session's DynamoDB requests and billed write
// units (dynamobench.Meter); the cost sections' stores run through it.
type meter struct{ *dynamobench.Meter }

// sessionMeter is one session's account.
type sessionMeter = dynamobench.Account

// newMeter returns a meter on inner; raw is the uncounted client of its
// size reads, nil for none (dynamobench.NewMeter).
func newMeter(inner, raw dynamo.Client) *meter { return &meter{dynamobench.NewMeter(inner, raw)} }

// session returns the account of sessionID.
func (m *meter) session(sessionID string) sessionMeter { return m.Session(sessionID) }

// kbUnits is the write units of n bytes (dynamobench.KBUnits).
func kbUnits(n int) int { return dynamobench.KBUnits(n) }

// errCut is what a cut transport answers every HTTP attempt with.
var errCut = errors.New("turnbench: the process is gone (transport cut)")

// cutTransport is an HTTP transport that fails every attempt once cut:
// below the SDK's retryer, so the SDK retries and gives up as it would
// against a process whose network is gone; nothing it sends after the cut
// reaches the server.
type cutTransport struct {
	cut   atomic.Bool
	inner http.RoundTripper
}

func (t *cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.cut.Load() {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, errCut
	}
	return t.inner.RoundTrip(r)
}

// runeLen is the number of runes of s.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
