package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/model"
)

// PartialText is the text delta a StreamFailure's fake sends before it
// fails mid-stream.
const PartialText = "partial "

// StreamFailure is one way a provider's service fails a stream, scripted
// in the provider's own wire by Model, with what the provider must report.
type StreamFailure struct {
	// Model returns the provider talking to a fake server that fails
	// this way.
	Model func(t *testing.T) model.Model
	// BeforeStream reports that the failure comes from Stream (an error
	// status), not from Recv; Stream then returns no stream.
	BeforeStream bool
	// Events is how many events arrive before the error, each the text
	// delta PartialText.
	Events int
	// Code and Retryable are the *model.Error the failure must become.
	Code      string
	Retryable bool
}

// RunStreamFailures checks each failure (by name) on req: the error is a
// *model.Error with the failure's code and retryability, it comes from
// Stream or from Recv as the failure says, after exactly its events, and
// a Recv after it fails again.
func RunStreamFailures(t *testing.T, req model.Request, failures map[string]StreamFailure) {
	for name, f := range failures {
		t.Run(name, func(t *testing.T) {
			st, err := f.Model(t).Stream(context.Background(), req)
			var evs []model.Event
			if !f.BeforeStream {
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				defer CloseStream(t, st)
				evs, err = Drain(t, st)
			} else if st != nil {
				t.Fatalf("Stream returned a stream and %v", err)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error = %v (%T), want *model.Error", err, err)
			}
			if me.Code != f.Code || me.Retryable != f.Retryable {
				t.Errorf("model.Error = {%q, retryable %v}, want {%q, %v} (%v)", me.Code, me.Retryable, f.Code, f.Retryable, me.Err)
			}
			if len(evs) != f.Events {
				t.Errorf("got %d events before the error, want %d: %s", len(evs), f.Events, Dump(evs))
			}
			for _, e := range evs {
				if e.TextDelta != PartialText {
					t.Errorf("event %+v, want the partial delta", e)
				}
			}
			if st != nil {
				if _, err2 := st.Recv(); err2 == nil || err2 == io.EOF {
					t.Errorf("Recv after error = %v, want an error", err2)
				}
			}
		})
	}
}

// RunCancellation checks how a stream ends early on req: cancelling its
// context ends Recv with an error wrapping context.Canceled, Close from
// another goroutine ends it with an error, a second Close is harmless, and
// Stream on an ended context returns context.Canceled. holding returns
// the provider on a fake that streams the text delta "a" and then holds
// the stream open until the client goes away; idle one whose fake is
// never reached.
func RunCancellation(t *testing.T, req model.Request, holding, idle func(t *testing.T) model.Model) {
	tests := map[string]struct {
		stop    func(t *testing.T, cancel context.CancelFunc, st model.Stream)
		wantCtx bool
	}{
		"context cancelled": {func(_ *testing.T, cancel context.CancelFunc, _ model.Stream) { cancel() }, true},
		"Close from another goroutine": {func(t *testing.T, _ context.CancelFunc, st model.Stream) {
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := holding(t).Stream(ctx, req)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer CloseStream(t, st)
			if e, err := st.Recv(); err != nil || e.TextDelta != "a" {
				t.Fatalf("first Recv = %+v, %v", e, err)
			}
			// The stop comes while Recv waits (or before it: either way
			// Recv must end with an error).
			time.AfterFunc(5*time.Millisecond, func() { tc.stop(t, cancel, st) })
			_, err = st.Recv()
			if err == nil || err == io.EOF {
				t.Fatalf("Recv = %v, want an error", err)
			}
			if got := errors.Is(err, context.Canceled); got != tc.wantCtx {
				t.Errorf("errors.Is(%v, context.Canceled) = %v, want %v", err, got, tc.wantCtx)
			}
			if err := st.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
	t.Run("context already ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := idle(t).Stream(ctx, req); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stream = %v, want context.Canceled", err)
		}
	})
}

// Drain reads events from st until an error and returns both; more than
// 100 events fail t.
func Drain(t testing.TB, st model.Stream) ([]model.Event, error) {
	t.Helper()
	var evs []model.Event
	for {
		e, err := st.Recv()
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
		if len(evs) > 100 {
			t.Fatal("too many events")
		}
	}
}

// Dump renders events as JSON lines for a failure message.
func Dump(evs []model.Event) string {
	var b strings.Builder
	for _, e := range evs {
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// CloseStream closes st, failing t on an error.
func CloseStream(t testing.TB, st model.Stream) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// CheckEvents streams req on m to its end and checks that the events are
// want, that the stream ends with io.EOF and that a Recv after it is
// io.EOF again.
func CheckEvents(t *testing.T, m model.Model, req model.Request, want []model.Event) {
	t.Helper()
	st, err := m.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer CloseStream(t, st)
	got, err := Drain(t, st)
	if err != io.EOF {
		t.Fatalf("Recv error = %v, want io.EOF", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events =\n%s\nwant\n%s", Dump(got), Dump(want))
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Errorf("Recv after EOF = %v", err)
	}
}
