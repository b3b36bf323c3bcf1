package storetest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// turnCases prove SaveTurn, FindTurn, Supersede and LoadContext
// (docs/design.md#storage-one-dynamodb-table).
func turnCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"SaveTurnRoundTripsEveryField": func(t *testing.T, e *env) {
			req := claimRequest("s1", "t1")
			req.Lineage = protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "t0", SourceMessageID: "t0-user"}
			c := e.claimWith(req)
			want := richTurn(c, "s1", e.clock.Now())
			e.save(c, want)
			e.release("s1", c, chat.OutcomeCompleted, want.LastSequence)
			wantTurn(t, "FindTurn", e.find("s1", "t1"), want)

			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil {
				t.Fatalf("ListTurns: %v", err)
			}
			if len(page.Turns) != 1 {
				t.Fatalf("ListTurns returned %d turns, want 1", len(page.Turns))
			}
			wantTurn(t, "ListTurns", &page.Turns[0], want)
			loaded, _, err := e.store.LoadContext(e.ctx, "s1", 2, 1000)
			if err != nil {
				t.Fatalf("LoadContext: %v", err)
			}
			if len(loaded) != 1 {
				t.Fatalf("LoadContext returned %d turns, want 1", len(loaded))
			}
			wantTurn(t, "LoadContext", &loaded[0], want)
		},

		"SaveTurnLargeIntact": func(t *testing.T, e *env) {
			// 1 MiB of content that does not compress well (hex of a seeded
			// random stream), in 16 messages: a store must split or compress
			// it, never truncate (docs/design.md#storage-one-dynamodb-table).
			c := e.claim("s1", "big")
			turn := e.turnFor(c, "s1")
			rng := rand.New(rand.NewPCG(1, 2))
			raw := make([]byte, 32<<10)
			turn.Messages = turn.Messages[:0]
			for i := range 16 {
				for j := 0; j < len(raw); j += 8 {
					v := rng.Uint64()
					for k := range 8 {
						raw[j+k] = byte(v >> (8 * k))
					}
				}
				turn.Messages = append(turn.Messages, protocol.Message{
					ID: fmt.Sprintf("big-%02d", i), Role: protocol.RoleAssistant, Status: protocol.MessageComplete,
					CreatedAt: stamp(e.clock.Now()), Content: hex.EncodeToString(raw),
				})
			}
			size := 0
			for _, m := range turn.Messages {
				size += len(m.Content)
			}
			if size < 1<<20 {
				t.Fatalf("test turn has %d bytes of content, want >= 1 MiB", size)
			}
			e.save(c, turn)
			e.release("s1", c, chat.OutcomeCompleted, turn.LastSequence)
			wantTurn(t, "FindTurn of a 1 MiB turn", e.find("s1", "big"), turn)
			loaded, _, err := e.store.LoadContext(e.ctx, "s1", 2, 1000)
			if err != nil || len(loaded) != 1 {
				t.Fatalf("LoadContext: %d turns, %v; want 1", len(loaded), err)
			}
			wantTurn(t, "LoadContext of a 1 MiB turn", &loaded[0], turn)
		},

		"SaveTurnRetryReplaces": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			turn := e.turnFor(c, "s1")
			turn.Status = chat.TurnRunning
			e.save(c, turn)
			retry := e.turnFor(c, "s1")
			retry.Status = chat.TurnError
			retry.Error = &protocol.Diagnostic{Version: 1, Code: "MODEL_FAILED", Message: "The model failed.", Retryable: true}
			retry.Messages[1].Content = "partial"
			e.save(c, retry)
			wantTurn(t, "turn after a retried save", e.find("s1", "t1"), retry)
		},

		"SaveTurnOtherTokenLeaseLost": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			turn := e.turnFor(c, "s1")
			e.save(c, turn)
			e.release("s1", c, chat.OutcomeCompleted, turn.LastSequence)
			c2 := e.claim("s1", "t2")

			overwrite := e.turnFor(c, "s1") // ordinal 1, written by t1's claim
			overwrite.Messages[1].Content = "overwritten"
			for name, claim := range map[string]*chat.Claim{"next claim's token": forged(c, c2.Lease.Token), "made-up token": forged(c, "not-a-token")} {
				err := e.store.SaveTurn(e.ctx, claim, overwrite)
				wantErr(t, "save over t1 with the "+name, err, chat.ErrLeaseLost)
			}
			err := e.store.SaveTurn(e.ctx, c2, overwrite)
			wantErr(t, "save of another ordinal than the claim's", err, chat.ErrInvalidRequest)
			wantTurn(t, "t1 after rejected saves", e.find("s1", "t1"), turn)
		},

		"SaveTurnNilArtifactsKeepsStored": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			turn := e.turnFor(c, "s1")
			turn.Status = chat.TurnRunning
			turn.Artifacts = []chat.ArtifactReference{{EntryPath: "first.md", ArtifactType: chat.ArtifactDocument}}
			e.save(c, turn)
			put := []chat.ArtifactReference{{EntryPath: "out/chart.png", ArtifactType: chat.ArtifactImage}}
			if _, err := e.store.PutArtifacts(e.ctx, "s1", "t1", alice, put); err != nil {
				t.Fatalf("PutArtifacts: %v", err)
			}
			retry := e.turnFor(c, "s1")
			retry.Artifacts = nil
			e.save(c, retry)
			got := e.find("s1", "t1")
			if !slices.Equal(got.Artifacts, put) {
				t.Errorf("artifacts after a save with nil Artifacts = %+v, want the stored %+v", got.Artifacts, put)
			}
			arts, err := e.store.GetArtifacts(e.ctx, "s1", "t1", alice)
			if err != nil || !slices.Equal(arts, put) {
				t.Errorf("GetArtifacts = %+v, %v; want %+v", arts, err, put)
			}
		},

		"TurnVisibleOnlyOnceSaved": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			_, err := e.store.FindTurn(e.ctx, "s1", "t1", alice)
			wantErr(t, "FindTurn of a claimed, unsaved turn", err, chat.ErrTurnNotFound)
			_, err = e.store.FindTurn(e.ctx, "s1", "never", alice)
			wantErr(t, "FindTurn of an unknown turn", err, chat.ErrTurnNotFound)
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice})
			if err != nil || len(page.Turns) != 0 || page.HasMore || page.NextCursor != "" {
				t.Fatalf("ListTurns before the save = %+v, %v; want an empty last page", page, err)
			}
			// A running turn's checkpoint is a stored, listed turn.
			turn := e.turnFor(c, "s1")
			turn.Status = chat.TurnRunning
			e.save(c, turn)
			wantTurn(t, "FindTurn after the save", e.find("s1", "t1"), turn)
		},

		"SupersedeHidesTurns": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 4) // ordinals 1-4
			req := claimRequest("s1", "edit")
			req.Lineage = protocol.Lineage{Operation: protocol.OperationEdit, ParentTurnID: "t001", SourceMessageID: "t001-user"}
			c := e.claimWith(req)
			// [3, 4) marks ordinal 3 only: the range is half-open.
			if _, err := e.store.Supersede(e.ctx, c, 3, 4); err != nil {
				t.Fatalf("Supersede: %v", err)
			}
			for id, want := range map[string]bool{"t001": false, "t002": true, "t003": false} {
				if got := e.find("s1", id); got.Superseded != want {
					t.Errorf("after Supersede [3, 4): FindTurn(%s).Superseded = %v, want %v", id, got.Superseded, want)
				}
			}
			for range 2 { // idempotent
				if _, err := e.store.Supersede(e.ctx, c, 2, c.Lease.Ordinal); err != nil {
					t.Fatalf("Supersede: %v", err)
				}
			}
			_, err := e.store.Supersede(e.ctx, forged(c, "not-a-token"), 1, c.Lease.Ordinal)
			wantErr(t, "Supersede without the lease", err, chat.ErrLeaseLost)

			loaded, _, err := e.store.LoadContext(e.ctx, "s1", c.Lease.Ordinal, 1000)
			if err != nil {
				t.Fatalf("LoadContext: %v", err)
			}
			if ids := turnIDs(loaded); !slices.Equal(ids, []string{"t000"}) {
				t.Errorf("LoadContext after supersede = %v, want [t000]", ids)
			}
			for _, id := range []string{"t001", "t002", "t003"} {
				if got := e.find("s1", id); !got.Superseded {
					t.Errorf("FindTurn(%s).Superseded = false, want true", id)
				}
			}
			if got := e.find("s1", "t000"); got.Superseded {
				t.Error("FindTurn(t000).Superseded = true, want false (outside the range)")
			}
			turn := e.turnFor(c, "s1")
			e.save(c, turn)
			e.release("s1", c, chat.OutcomeCompleted, turn.LastSequence)
			page, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: "s1", Principal: alice, Order: chat.OrderAsc})
			if err != nil {
				t.Fatalf("ListTurns: %v", err)
			}
			if ids := turnIDs(page.Turns); !slices.Equal(ids, []string{"t000", "edit"}) || page.HasMore {
				t.Errorf("ListTurns after supersede = %v (more %v), want [t000 edit] and no more", ids, page.HasMore)
			}
		},

		"LoadContextVisibleTerminalTurnsOldestFirst": func(t *testing.T, e *env) {
			turns := e.completeTurns("s1", "t", 3) // ordinals 1-3
			c := e.claim("s1", "t003")
			running := e.turnFor(c, "s1")
			running.Status = chat.TurnRunning
			e.save(c, running)

			cases := map[string]struct {
				before int64
				want   []*chat.Turn
			}{
				"before the running turn": {4, turns},
				"running turn excluded":   {5, turns},
				"before ordinal 3":        {3, turns[:2]},
				"before the first turn":   {1, nil},
				"before ordinal 0":        {0, nil},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					got, _, err := e.store.LoadContext(e.ctx, "s1", tc.before, 1000)
					if err != nil {
						t.Fatalf("LoadContext(%d): %v", tc.before, err)
					}
					if len(got) != len(tc.want) {
						t.Fatalf("LoadContext(%d) = %v, want %d turns", tc.before, turnIDs(got), len(tc.want))
					}
					for i := range got {
						wantTurn(t, fmt.Sprintf("LoadContext(%d)[%d]", tc.before, i), &got[i], tc.want[i])
					}
				})
			}

			interrupted := e.turnFor(c, "s1")
			interrupted.Status = chat.TurnInterrupted
			interrupted.Error = &protocol.Diagnostic{Version: 1, Code: "TURN_INTERRUPTED", Message: "The turn was stopped."}
			e.save(c, interrupted)
			got, _, err := e.store.LoadContext(e.ctx, "s1", 5, 1000)
			if err != nil {
				t.Fatalf("LoadContext: %v", err)
			}
			if ids := turnIDs(got); !slices.Equal(ids, []string{"t000", "t001", "t002", "t003"}) {
				t.Errorf("LoadContext with an interrupted turn = %v, want [t000 t001 t002 t003]", ids)
			}
		},

		"CallerMutationsDoNotLeak": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			saved := richTurn(c, "s1", e.clock.Now())
			turn := richTurn(c, "s1", e.clock.Now())
			e.save(c, turn)
			scribble(turn)
			wantTurn(t, "after mutating the saved value", e.find("s1", "t1"), saved)
			scribble(e.find("s1", "t1"))
			wantTurn(t, "after mutating a read value", e.find("s1", "t1"), saved)

			refs := []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}
			got, err := e.store.PutArtifacts(e.ctx, "s1", "t1", alice, refs)
			if err != nil {
				t.Fatalf("PutArtifacts: %v", err)
			}
			refs[0].EntryPath = "mutated.md"
			got[0].EntryPath = "mutated-too.md"
			read, err := e.store.GetArtifacts(e.ctx, "s1", "t1", alice)
			if err != nil {
				t.Fatalf("GetArtifacts: %v", err)
			}
			read[0].EntryPath = "mutated-as-well.md"
			arts, err := e.store.GetArtifacts(e.ctx, "s1", "t1", alice)
			if err != nil || len(arts) != 1 || arts[0].EntryPath != "a.md" {
				t.Errorf("GetArtifacts after mutating PutArtifacts' input and result = %+v, %v; want [a.md]", arts, err)
			}

			s := e.session("s1")
			s.ActiveTurn.Token = "mutated"
			s.TerminalTurns = append(s.TerminalTurns, chat.TerminalEntry{TurnID: "ghost"})
			if again := e.session("s1"); again.ActiveTurn.Token != c.Lease.Token || len(again.TerminalTurns) != 0 {
				t.Errorf("session after mutating a read value: token %q, window %+v", again.ActiveTurn.Token, again.TerminalTurns)
			}
		},
	}
}

// richTurn returns a turn of claim c that sets every field a store keeps:
// messages with parts, tool calls, a tool result and metadata; text with
// U+2028, emoji and HTML-special characters; usage; an error; lineage;
// artifacts; sequences; timestamps.
func richTurn(c *chat.Claim, sessionID string, now time.Time) *chat.Turn {
	id := c.Lease.TurnID
	text := "Line one\u2028line two 🚀 <b>&amp;</b> \"quoted\" \\ tab\t"
	toolCallID := id + "-call-1"
	return &chat.Turn{
		SessionID: sessionID,
		TurnID:    id,
		Ordinal:   c.Lease.Ordinal,
		Status:    chat.TurnError,
		Lineage:   c.Lease.Lineage,
		InputHash: c.Lease.InputHash,
		Messages: []protocol.Message{
			{
				ID: id + "-user", Role: protocol.RoleUser, Content: "Draw a 📈 chart\u2028please", Status: protocol.MessageComplete,
				CreatedAt: stamp(now),
				Parts: []protocol.Part{
					{Type: "text", Text: ptr("Draw a 📈 chart\u2028please")},
					{Type: "image", Source: ptr("https://example.com/a.png"), MimeType: ptr("image/png"), Detail: ptr("high")},
					{Type: "audio", Source: ptr("s3://bucket/clip.mp3"), DurationSec: ptr(12.5)},
					{Type: "file", Source: ptr("data:text/plain;base64,aGk="), Filename: ptr("notes ü.txt")},
				},
				Metadata: json.RawMessage(`{"client":"web","tags":["a","ü","🚀"],"note":"x\u2028y <&>"}`),
			},
			{
				ID: id + "-assistant", Role: protocol.RoleAssistant, Content: text, Status: protocol.MessageError,
				CreatedAt: stamp(now.Add(1500 * time.Millisecond)),
				ToolCalls: []protocol.ToolCall{
					{ID: toolCallID, Name: "render_chart", Args: json.RawMessage(`{"title":"Q3 📈","points":[1,2.5,-3],"ok":true,"none":null}`),
						Status: protocol.ToolCallComplete, Result: ptr("chart.png")},
					{ID: id + "-call-2", Name: "lookup", Args: json.RawMessage(`{}`), Status: protocol.ToolCallError, Error: ptr("timeout")},
				},
			},
			{
				ID: id + "-tool", Role: protocol.RoleTool, Content: "chart.png", Status: protocol.MessageComplete,
				CreatedAt: stamp(now.Add(2 * time.Second)), ToolCallID: &toolCallID,
			},
		},
		Usage: protocol.Usage{PromptTokens: 1200, CompletionTokens: 345, TotalTokens: 1545},
		Error: &protocol.Diagnostic{Version: 1, Code: "MODEL_STREAM_FAILED", Message: "The model stream failed.", Retryable: true},
		Artifacts: []chat.ArtifactReference{
			{EntryPath: "out/chart 📈.png", ArtifactType: chat.ArtifactImage},
			{EntryPath: "out/report.md", ArtifactType: chat.ArtifactDocument},
		},
		FirstSequence: c.BaseSequence + 1,
		LastSequence:  c.BaseSequence + 9,
		StartedAt:     now,
		CompletedAt:   now.Add(2500 * time.Millisecond),
	}
}

// scribble overwrites every reachable part of t in place: through slices,
// pointers and raw JSON, the ways a caller could alias a store's state.
func scribble(t *chat.Turn) {
	t.Status = chat.TurnComplete
	t.Error.Code = "SCRIBBLED"
	t.Artifacts[0].EntryPath = "scribbled"
	for i := range t.Messages {
		m := &t.Messages[i]
		m.Content = "scribbled"
		for j := range m.Parts {
			if m.Parts[j].Text != nil {
				*m.Parts[j].Text = "scribbled"
			}
			if m.Parts[j].Source != nil {
				*m.Parts[j].Source = "scribbled"
			}
		}
		for j := range m.ToolCalls {
			m.ToolCalls[j].Args[0] = '['
			if m.ToolCalls[j].Result != nil {
				*m.ToolCalls[j].Result = "scribbled"
			}
		}
		if len(m.Metadata) > 0 {
			m.Metadata[0] = '['
		}
		if m.ToolCallID != nil {
			*m.ToolCallID = "scribbled"
		}
	}
}

func ptr[T any](v T) *T { return &v }
