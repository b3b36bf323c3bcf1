package turn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/turn"
)

// failingTitles is a scripted model whose title calls (model id
// "title-model") fail.
type failingTitles struct{ *scriptModel }

func (m failingTitles) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	if req.ModelID == "title-model" {
		return nil, &model.Error{Code: "MODEL_FAILED", Err: errors.New("the title model is down")}
	}
	return m.scriptModel.Stream(ctx, req)
}

// listedTitle waits until alice's session is listed with a title that
// is not empty, and returns it.
func listedTitle(t *testing.T, store chat.Store, sessionID string) string {
	t.Helper()
	title := ""
	waitFor(t, "a listed title", func() bool {
		page, err := store.ListSessions(t.Context(), chat.SessionListRequest{Principal: chat.Principal{Subject: "alice", Tenant: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			if s.SessionID == sessionID && s.Title != "" && s.LastStatus != "" {
				title = s.Title
				return true
			}
		}
		return false
	})
	return title
}

// TestTitleModel: a definition that names a title model gets its
// session's title from one more call of its provider once the first turn
// completed (the title model's id, a system prompt, a small completion
// cap, the first message and the answer), quotes and a final period
// trimmed; later turns call no title model; a failing title model leaves
// the title to the first message.
func TestTitleModel(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		store := newStore(t)
		m := &scriptModel{Chunks: []string{"\"Sourdough ", "basics.\""}}
		e := newEnv(t, store, m, func(o *turn.Options) { o.Definition.TitleModelID = "title-model" })
		e.submit(t, "s1", "t1", "How do I bake bread with a long fermentation?", nil, nil).want(t, 200, "")
		if got := listedTitle(t, store, "s1"); got != "Sourdough basics" {
			t.Errorf("title %q, want the title model's", got)
		}
		if m.Calls() != 2 {
			t.Fatalf("%d model calls, want the turn's and the title's", m.Calls())
		}
		req := m.LastRequest()
		if req.ModelID != "title-model" || req.MaxTokens != 32 || req.System == "" || len(req.Tools) != 0 ||
			len(req.Messages) != 3 || req.Messages[0].Content != "How do I bake bread with a long fermentation?" || req.Messages[1].Content != "\"Sourdough basics.\"" {
			t.Errorf("title request %+v", req)
		}
		e.submit(t, "s1", "t2", "And the oven?", nil, nil).want(t, 200, "")
		if m.Calls() != 3 {
			t.Errorf("%d model calls after a second turn, want 3: no title call", m.Calls())
		}

		fm := failingTitles{&scriptModel{Chunks: []string{"fine"}}}
		e2 := newEnv(t, store, nil, func(o *turn.Options) { o.Model = fm; o.Definition.TitleModelID = "title-model" })
		e2.submit(t, "s2", "t1", "Which flour for rye bread?", nil, nil).want(t, 200, "")
		if got := listedTitle(t, store, "s2"); got != "Which flour for rye bread?" {
			t.Errorf("title after a failing title model %q, want the first message", got)
		}

		// Without a title model: no call, the first message.
		m3 := &scriptModel{Chunks: []string{"ok"}}
		e3 := newEnv(t, store, m3, nil)
		e3.submit(t, "s3", "t1", "Tell me about starters", nil, nil).want(t, 200, "")
		if got := listedTitle(t, store, "s3"); got != "Tell me about starters" || m3.Calls() != 1 {
			t.Errorf("title without a title model %q after %d calls", got, m3.Calls())
		}
	})
}
