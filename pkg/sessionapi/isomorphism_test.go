package sessionapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/store/storetest"
	"github.com/turnstream/turnstream/pkg/turn"
)

// inputModel is a model.Model whose behaviour is chosen by the turn's
// input: "fail ..." streams one delta and then fails with a provider error,
// "stop ..." streams one delta and then waits for its context to end (the
// stop route), anything else answers "echo: <input>" in two deltas.
type inputModel struct {
	started chan string // receives the input of each call once it streamed
}

func (m *inputModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	input, _ := model.LastUserContent(req.Messages)
	return &inputStream{ctx: ctx, m: m, input: input}, nil
}

type inputStream struct {
	ctx   context.Context
	m     *inputModel
	input string
	step  int
}

func (s *inputStream) Recv() (model.Event, error) {
	if err := s.ctx.Err(); err != nil {
		return model.Event{}, err
	}
	s.step++
	switch {
	case s.step == 1:
		return model.Event{TextDelta: "echo: "}, nil
	case s.step == 2 && strings.HasPrefix(s.input, "fail"):
		return model.Event{}, &model.Error{Code: "ThrottlingException", Retryable: true, Err: errors.New("slow down")}
	case s.step == 2 && strings.HasPrefix(s.input, "stop"):
		s.m.started <- s.input
		<-s.ctx.Done()
		return model.Event{}, s.ctx.Err()
	case s.step == 2:
		return model.Event{TextDelta: s.input}, nil
	case s.step == 3:
		return model.Event{Usage: &protocol.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, FinishReason: model.FinishStop}, nil
	}
	return model.Event{}, io.EOF
}

func (s *inputStream) Close() error { return nil }

// TestHistoryIsomorphism runs turns through the turn handler (completed,
// failed, stopped) and checks that history serves exactly what the terminal
// snapshots carried: the same canonical messages as JSON, ids included, the
// same statuses and diagnostics (docs/design.md#snapshots; chatkit adapter
// protocol: history isomorphism).
func TestHistoryIsomorphism(t *testing.T) {
	factories := map[string]storetest.Factory{
		// The turn handler renews leases with real timers, so the store
		// runs on the real clock here.
		"memory": func(t *testing.T, _ *storetest.Clock, key []byte) chat.Store {
			return memory.New(memory.Options{CursorKey: key})
		},
		"dynamo": func(t *testing.T, _ *storetest.Clock, key []byte) chat.Store {
			return newDynamoStore(t, time.Now, key)
		},
	}
	t.Parallel()
	for name, factory := range factories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := factory(t, nil, bytes.Repeat([]byte{9}, 32))
			authn := devAuthenticator(t)
			m := &inputModel{started: make(chan string, 1)}
			turnHandler, err := turn.NewHandler(turn.Options{
				Config: turn.Config{
					Store:            store,
					Model:            m,
					Definition:       turn.Definition{ID: "assistant", Revision: 1},
					SnapshotInterval: time.Millisecond,
					LeaseDuration:    3 * time.Second,
					RenewInterval:    5 * time.Millisecond,
					TurnTimeout:      10 * time.Second,
					CleanupReserve:   3 * time.Second,
					Logger:           slog.New(slog.DiscardHandler),
				},
				Authenticator: authn,
			})
			if err != nil {
				t.Fatal(err)
			}
			turnSrv := httptest.NewServer(turnHandler)
			t.Cleanup(turnSrv.Close)
			history, _ := newHandlers(t, sessionapi.Options{Store: store, Authenticator: authn, Logger: slog.New(slog.DiscardHandler)})

			type outcome struct {
				turnID string
				status chat.TurnStatus
				code   string
			}
			runs := []struct {
				outcome
				input string
			}{
				{outcome{"turn-ok", chat.TurnComplete, ""}, "hello <world> & all"},
				{outcome{"turn-fail", chat.TurnError, ""}, "fail please"},
				{outcome{"turn-stop", chat.TurnInterrupted, protocol.CodeTurnInterrupted}, "stop me"},
				{outcome{"turn-after", chat.TurnComplete, ""}, "and again"},
			}
			var snapshots []*protocol.SnapshotPayload
			for _, run := range runs {
				done := make(chan *protocol.SnapshotPayload, 1)
				go func() { done <- submitTurn(t, turnSrv.URL, "iso", run.turnID, run.input) }()
				var snap *protocol.SnapshotPayload
				if strings.HasPrefix(run.input, "stop") {
					select {
					case <-m.started:
						stopTurn(t, turnSrv.URL, "iso", run.turnID)
					case snap = <-done:
						t.Fatalf("%s ended before it was stopped: %+v", run.turnID, snap)
					}
				}
				snap = <-done
				if snap == nil {
					t.FailNow()
				}
				snapshots = append(snapshots, snap)
			}

			// Per turn: /turns carries the turn's status, error and messages
			// exactly as its terminal snapshot (session scope: all visible
			// messages up to that turn).
			turnsPage := decodeResp[sessionapi.TurnPage](t, history, "/sessions/iso/turns?order=asc")
			if got := ids(turnsPage.Turns); !slices.Equal(got, []string{"turn-ok", "turn-fail", "turn-stop", "turn-after"}) {
				t.Fatalf("history turns %v", got)
			}
			var upTo []protocol.Message
			for i, run := range runs {
				ht := turnsPage.Turns[i]
				snap := snapshots[i]
				upTo = append(upTo, ht.Messages...)
				if got, want := messageJSON(t, upTo), messageJSON(t, snap.Messages); got != want {
					t.Errorf("%s: history messages up to this turn\n got  %s\n want %s", run.turnID, got, want)
				}
				if ht.Status != run.status {
					t.Errorf("%s: history status %q, want %q", run.turnID, ht.Status, run.status)
				}
				if got, want := jsonOf(t, ht.Error), jsonOf(t, snap.Error); got != want {
					t.Errorf("%s: history error %s, snapshot error %s", run.turnID, got, want)
				}
				if run.code != "" && (ht.Error == nil || ht.Error.Code != run.code) {
					t.Errorf("%s: error %+v, want code %s", run.turnID, ht.Error, run.code)
				}
				if got, want := jsonOf(t, ht.Usage), jsonOf(t, snap.Usage); got != want {
					t.Errorf("%s: usage %s, snapshot usage %s", run.turnID, got, want)
				}
			}

			// The whole conversation: /messages equals the last terminal
			// snapshot, in one page and across pages of one turn each.
			last := messageJSON(t, snapshots[len(snapshots)-1].Messages)
			all := decodeResp[sessionapi.MessagePage](t, history, "/sessions/iso/messages?order=asc")
			if got := messageJSON(t, all.Messages); got != last {
				t.Fatalf("/messages\n got  %s\n want %s", got, last)
			}
			var paged []protocol.Message
			cursor := ""
			for {
				page := decodeResp[sessionapi.MessagePage](t, history, "/sessions/iso/messages?limit=1&cursor="+cursor)
				paged = append(page.Messages, paged...) // desc pages: prepend
				if !page.HasMore {
					break
				}
				cursor = *page.NextCursor
			}
			if got := messageJSON(t, paged); got != last {
				t.Fatalf("/messages desc pages\n got  %s\n want %s", got, last)
			}
			if err := protocol.ValidateMessages(all.Messages); err != nil {
				t.Fatalf("history messages are not valid canonical records: %v", err)
			}
		})
	}
}

// submitTurn posts client.turn.submit as alice and returns the stream's
// terminal snapshot (nil after reporting an error).
func submitTurn(t *testing.T, base, sessionID, turnID, input string) *protocol.SnapshotPayload {
	body, err := protocol.EncodeEvent(&protocol.Event{
		EventID: "ev-" + turnID, SessionID: sessionID, TurnID: turnID,
		EmittedAt: "2026-11-29T12:00:00.000Z", Kind: protocol.EventSubmit,
		Submit: &protocol.SubmitPayload{Input: input},
	})
	if err != nil {
		t.Errorf("encode: %v", err)
		return nil
	}
	resp := postJSON(t, base+"/", body)
	if resp == nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("submit %s: %d %s", turnID, resp.StatusCode, raw)
		return nil
	}
	var terminal *protocol.SnapshotPayload
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		ev, d := protocol.DecodeTurnEvent(sc.Bytes())
		if d != nil {
			t.Errorf("submit %s: undecodable line %s", turnID, sc.Bytes())
			return nil
		}
		if ev.Kind == protocol.EventSnapshot && ev.Snapshot.Status != protocol.StatusStreaming {
			terminal = ev.Snapshot
		}
	}
	if terminal == nil {
		t.Errorf("submit %s: no terminal snapshot in %s", turnID, raw)
	}
	return terminal
}

func stopTurn(t *testing.T, base, sessionID, turnID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sessionId": sessionID, "turnId": turnID})
	resp := postJSON(t, base+"/stop", body)
	if resp == nil {
		t.FailNow()
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusAccepted {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("stop: %d %s", resp.StatusCode, raw)
	}
}

func postJSON(t *testing.T, url string, body []byte) *http.Response {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Errorf("request: %v", err)
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.DevAuthorization(alice.Subject))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return nil
	}
	return resp
}

// decodeResp serves GET target as alice on h and decodes the 200 body.
func decodeResp[T any](t *testing.T, h http.Handler, target string) T {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Header.Set("Authorization", auth.DevAuthorization(alice.Subject))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return decode[T](t, target, response{status: w.Code, header: w.Header(), body: w.Body.Bytes()})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
