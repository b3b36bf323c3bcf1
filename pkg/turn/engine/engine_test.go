package engine_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn/engine"
)

const submitBody = `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e1","sessionId":"s1","turnId":"t1",` +
	`"sequence":0,"emittedAt":"2026-07-11T03:00:00.000Z","event":"client.turn.submit","payload":{"input":"hello"}}`

// hooks records what the engine told its hooks.
type hooks struct {
	mu       sync.Mutex
	calls    []string
	accepted string
	start    engine.TurnStart
	end      engine.TurnEnd
}

func (k *hooks) note(s string) {
	k.mu.Lock()
	k.calls = append(k.calls, s)
	k.mu.Unlock()
}

func (k *hooks) config(store chat.Store, authenticate func(context.Context, *http.Request) (chat.Principal, error)) engine.Config {
	return engine.Config{
		Store: store, Model: echo.New(0, 4), Definition: engine.Definition{ID: "default", Revision: 1},
		Authenticate: authenticate,
		Accepted: func(_ context.Context, sessionID, turnID string) {
			k.mu.Lock()
			k.accepted = sessionID + "/" + turnID
			k.mu.Unlock()
		},
		Trace: func(s engine.TurnStart) (func(context.Context) context.Context, *engine.Trace) {
			k.mu.Lock()
			k.start = s
			k.mu.Unlock()
			return nil, &engine.Trace{
				FirstSnapshot: func(time.Time) { k.note("first snapshot") },
				ModelCall: func(ctx context.Context, _ model.Request) (context.Context, engine.ModelCallTrace) {
					k.note("model call")
					return ctx, engine.ModelCallTrace{Done: func(err error) { k.note("model call done") }}
				},
				Ended: func(e engine.TurnEnd) {
					k.mu.Lock()
					k.end = e
					k.calls = append(k.calls, "ended")
					k.mu.Unlock()
				},
			}
		},
	}
}

func submit(e *engine.Engine) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(submitBody))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeSubmit(rec, req)
	return rec
}

// TestEngineWithoutItsEdge: the engine runs a turn with no router, no
// authenticator and no telemetry of its own: it asks Config.Authenticate
// for the caller, tells Accepted the ids the submit names, and calls the
// Trace hooks at the turn's steps, in order, with what the turn was.
func TestEngineWithoutItsEdge(t *testing.T) {
	alice := chat.Principal{Subject: "alice", Tenant: "t"}
	var k hooks
	e, err := engine.New(k.config(memory.New(memory.Options{}), func(context.Context, *http.Request) (chat.Principal, error) {
		return alice, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	rec := submit(e)
	var last *protocol.Event
	for sc := bufio.NewScanner(rec.Body); sc.Scan(); {
		ev, d := protocol.DecodeTurnEvent(sc.Bytes())
		if d != nil {
			t.Fatalf("line %s: %s", sc.Bytes(), d.Code)
		}
		last = ev
	}
	if rec.Code != http.StatusOK || last == nil || last.Snapshot == nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("%d, last line %+v", rec.Code, last)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.accepted != "s1/t1" {
		t.Errorf("Accepted got %q", k.accepted)
	}
	if k.start.SessionID != "s1" || k.start.TurnID != "t1" || k.start.Principal != alice || k.start.Provider != "custom" || k.start.Meter == nil {
		t.Errorf("TurnStart %+v", k.start)
	}
	if want := "first snapshot,model call,model call done,ended"; strings.Join(k.calls, ",") != want {
		t.Errorf("hooks called %v, want %s", k.calls, want)
	}
	if k.end.Outcome != engine.OutcomeComplete || k.end.Status != chat.TurnComplete || k.end.LeaseLost {
		t.Errorf("TurnEnd %+v", k.end)
	}
}

// TestEngineAcceptedAGUI: an AG-UI submit names its thread and run as
// the session and turn it runs (Config.Accepted), as a protocol submit
// does.
func TestEngineAcceptedAGUI(t *testing.T) {
	var k hooks
	e, err := engine.New(k.config(memory.New(memory.Options{}), func(context.Context, *http.Request) (chat.Principal, error) {
		return chat.Principal{Subject: "alice", Tenant: "t"}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"threadId":"s2","runId":"t2","messages":[{"id":"c1","role":"user","content":"hello"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
	req := httptest.NewRequest(http.MethodPost, engine.AGUIPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeAGUI(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "RUN_FINISHED") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.accepted != "s2/t2" || k.end.Outcome != engine.OutcomeComplete {
		t.Errorf("Accepted got %q, TurnEnd %+v", k.accepted, k.end)
	}
}

// TestEngineRefusesWithItsAuthenticator: an Authenticate error is the
// answer (401 for auth.ErrUnauthenticated), given before any body byte is
// read and before anything is stored; an engine without Authenticate is
// refused by New.
func TestEngineRefusesWithItsAuthenticator(t *testing.T) {
	store := memory.New(memory.Options{})
	var k hooks
	e, err := engine.New(k.config(store, func(context.Context, *http.Request) (chat.Principal, error) {
		return chat.Principal{}, auth.ErrUnauthenticated
	}))
	if err != nil {
		t.Fatal(err)
	}
	rec := submit(e)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), protocol.CodeRequestUnauthenticated) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
	if _, err := store.GetSession(t.Context(), "s1", chat.Principal{Subject: "alice", Tenant: "t"}); !errors.Is(err, chat.ErrSessionNotFound) {
		t.Errorf("a refused submit stored its session: %v", err)
	}
	if k.accepted != "" || len(k.calls) != 0 {
		t.Errorf("hooks called for a refused submit: %q %v", k.accepted, k.calls)
	}

	cfg := k.config(store, nil)
	if _, err := engine.New(cfg); err == nil {
		t.Error("New accepted a Config without Authenticate")
	}
}
