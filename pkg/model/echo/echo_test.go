package echo_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func user(content string) protocol.Message {
	return protocol.Message{ID: "m", Role: protocol.RoleUser, Content: content, Status: protocol.MessageComplete}
}

func assistant(content string) protocol.Message {
	return protocol.Message{ID: "a", Role: protocol.RoleAssistant, Content: content, Status: protocol.MessageComplete}
}

// drain reads s to io.EOF and returns its events.
func drain(t *testing.T, s model.Stream) []model.Event {
	t.Helper()
	var evs []model.Event
	for {
		ev, err := s.Recv()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatalf("Recv after %d events: %v", len(evs), err)
		}
		evs = append(evs, ev)
		if len(evs) > 10000 {
			t.Fatal("stream does not end")
		}
	}
}

func TestStream(t *testing.T) {
	tests := map[string]struct {
		chunk      int
		req        model.Request
		wantDeltas []string
		wantUsage  protocol.Usage
	}{
		"ascii in chunks of 4": {
			chunk:      4,
			req:        model.Request{Messages: []protocol.Message{user("hello")}},
			wantDeltas: []string{"Echo", ": he", "llo"},
			// in: 5 runes -> 2; out: "Echo: hello" 11 runes -> 3
			wantUsage: protocol.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5},
		},
		"multibyte never split": {
			chunk:      3,
			req:        model.Request{Messages: []protocol.Message{user("héé😀ü")}},
			wantDeltas: []string{"Ech", "o: ", "héé", "😀ü"},
			// in: 5 runes -> 2; out: 11 runes -> 3
			wantUsage: protocol.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5},
		},
		"last user message wins, context and system counted": {
			chunk: 100,
			req: model.Request{
				System:   "sys!",                                                                      // 4
				Messages: []protocol.Message{user("first"), assistant("Echo: first"), user("second")}, // 5 + 11 + 6
			},
			wantDeltas: []string{"Echo: second"},
			// in: 26 runes -> 7; out: 12 runes -> 3
			wantUsage: protocol.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10},
		},
		"whole reply when chunk is 0": {
			chunk:      0,
			req:        model.Request{Messages: []protocol.Message{user("abc")}},
			wantDeltas: []string{"Echo: abc"},
			wantUsage:  protocol.Usage{PromptTokens: 1, CompletionTokens: 3, TotalTokens: 4},
		},
		"empty input": {
			chunk:      1,
			req:        model.Request{Messages: []protocol.Message{user("")}},
			wantDeltas: []string{"E", "c", "h", "o", ":", " "},
			wantUsage:  protocol.Usage{PromptTokens: 0, CompletionTokens: 2, TotalTokens: 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := echo.New(0, tc.chunk).Stream(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, s)
			evs := drain(t, s)
			if len(evs) != len(tc.wantDeltas)+1 {
				t.Fatalf("%d events, want %d deltas and a final event: %+v", len(evs), len(tc.wantDeltas), evs)
			}
			for i, want := range tc.wantDeltas {
				ev := evs[i]
				if ev.TextDelta != want || ev.ToolCall != nil || ev.Usage != nil || ev.FinishReason != "" {
					t.Errorf("event %d = %+v, want delta %q only", i, ev, want)
				}
				if !utf8.ValidString(ev.TextDelta) {
					t.Errorf("event %d splits a character", i)
				}
			}
			last := evs[len(evs)-1]
			if last.TextDelta != "" || last.FinishReason != model.FinishStop || last.Usage == nil || *last.Usage != tc.wantUsage {
				t.Errorf("final event = %+v (usage %+v), want stop with %+v", last, last.Usage, tc.wantUsage)
			}
			if _, err := s.Recv(); err != io.EOF {
				t.Errorf("Recv after EOF = %v, want io.EOF", err)
			}
		})
	}
}

// TestThink: "/think <text>" streams <text> as reasoning, chunked like
// the text, before the ordinary reply, and counts it in the completion
// tokens and apart as reasoning tokens; "/think" with nothing after it,
// and "/think" later in the message, are plain input.
func TestThink(t *testing.T) {
	tests := map[string]struct {
		input     string
		reasoning []string
		reply     string
		usage     protocol.Usage
		rTokens   int64
	}{
		// in: 19 runes -> 5; reasoning "a plan  ok" 10 runes -> 3;
		// reply 25 runes -> 7, so completion 10.
		"reasoning then the reply": {"/think  a plan  ok ", []string{"a pl", "an  ", "ok"}, "Echo: /think  a plan  ok ",
			protocol.Usage{PromptTokens: 5, CompletionTokens: 10, TotalTokens: 15}, 3},
		"nothing to think":  {"/think ", nil, "Echo: /think ", protocol.Usage{PromptTokens: 2, CompletionTokens: 4, TotalTokens: 6}, 0},
		"not at the start":  {"x /think y", nil, "Echo: x /think y", protocol.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, 0},
		"no space after it": {"/thinking", nil, "Echo: /thinking", protocol.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, 0},
		"multibyte reasoning": {"/think 😀é😀é😀", []string{"😀é😀é", "😀"}, "Echo: /think 😀é😀é😀",
			protocol.Usage{PromptTokens: 3, CompletionTokens: 5 + 2, TotalTokens: 10}, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := echo.New(0, 4).Stream(context.Background(), model.Request{Messages: []protocol.Message{user(tc.input)}})
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, s)
			var reasoning []string
			var reply strings.Builder
			var last model.Event
			for _, ev := range drain(t, s) {
				switch {
				case ev.ReasoningDelta != "":
					if reply.Len() > 0 {
						t.Errorf("reasoning %q after the reply's text", ev.ReasoningDelta)
					}
					reasoning = append(reasoning, ev.ReasoningDelta)
				case ev.TextDelta != "":
					reply.WriteString(ev.TextDelta)
				default:
					last = ev
				}
				if ev.Reasoning != nil {
					t.Errorf("echo sent a reasoning block: %+v", ev.Reasoning)
				}
			}
			if !slices.Equal(reasoning, tc.reasoning) || reply.String() != tc.reply {
				t.Errorf("reasoning %q, reply %q; want %q, %q", reasoning, reply.String(), tc.reasoning, tc.reply)
			}
			if last.Usage == nil || *last.Usage != tc.usage || last.ReasoningTokens != tc.rTokens {
				t.Errorf("final event usage %+v, reasoning tokens %d; want %+v, %d", last.Usage, last.ReasoningTokens, tc.usage, tc.rTokens)
			}
		})
	}
}

func TestReplyIsPrefixPlusLastUserMessage(t *testing.T) {
	in := "  Multi\nline ✓ input  "
	s, err := echo.New(0, 4).Stream(context.Background(), model.Request{Messages: []protocol.Message{user(in)}})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, s)
	var b strings.Builder
	for _, ev := range drain(t, s) {
		b.WriteString(ev.TextDelta)
	}
	if got, want := b.String(), echo.Prefix+in; got != want {
		t.Errorf("reply %q, want %q", got, want)
	}
}

// TestMaxTokensCutsTheReply: a completion cap shorter than the reply
// cuts it at 4 runes a token (never inside a character) and ends with
// FinishLength, completion tokens the cap; a cap the reply fits in
// changes nothing.
func TestMaxTokensCutsTheReply(t *testing.T) {
	in := "héllo wörld, a reply longer than three tokens"
	for _, tc := range []struct {
		max    int
		reply  string
		finish model.FinishReason
	}{
		{3, "Echo: héllo ", model.FinishLength},
		{100, echo.Prefix + in, model.FinishStop},
		{0, echo.Prefix + in, model.FinishStop},
	} {
		s, err := echo.New(0, 5).Stream(context.Background(), model.Request{Messages: []protocol.Message{user(in)}, MaxTokens: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		closeOnCleanup(t, s)
		var b strings.Builder
		evs := drain(t, s)
		for _, ev := range evs {
			b.WriteString(ev.TextDelta)
		}
		last := evs[len(evs)-1]
		if b.String() != tc.reply || last.FinishReason != tc.finish || last.Usage == nil ||
			last.Usage.CompletionTokens != int64((utf8.RuneCountInString(tc.reply)+3)/4) {
			t.Errorf("MaxTokens %d: reply %q, finish %q, usage %+v; want %q, %q", tc.max, b.String(), last.FinishReason, last.Usage, tc.reply, tc.finish)
		}
		if tc.max == 3 && last.Usage.CompletionTokens != 3 {
			t.Errorf("cut reply: %d completion tokens, want the cap 3", last.Usage.CompletionTokens)
		}
	}
}

func TestStreamErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]struct {
		ctx   context.Context
		req   model.Request
		check func(t *testing.T, err error)
	}{
		"no user message": {
			ctx: context.Background(),
			req: model.Request{Messages: []protocol.Message{assistant("hi")}},
			check: func(t *testing.T, err error) {
				var me *model.Error
				if !errors.As(err, &me) || me.Code != echo.ErrorCodeNoUserMessage || me.Retryable {
					t.Errorf("err = %v, want non-retryable *model.Error %s", err, echo.ErrorCodeNoUserMessage)
				}
			},
		},
		"context already cancelled": {
			ctx: cancelled,
			req: model.Request{Messages: []protocol.Message{user("x")}},
			check: func(t *testing.T, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := echo.New(0, 4).Stream(tc.ctx, tc.req)
			if s != nil {
				t.Error("Stream returned a stream with an error")
			}
			tc.check(t, err)
		})
	}
}

// TestCancelDuringDelay cancels while Recv waits out a delay far longer than
// the test: Recv must return ctx.Err() promptly rather than sleep.
func TestCancelDuringDelay(t *testing.T) {
	tests := map[string]struct {
		stop    func(cancel context.CancelFunc, s model.Stream)
		wantErr func(error) bool
	}{
		"context cancelled": {
			stop:    func(cancel context.CancelFunc, _ model.Stream) { cancel() },
			wantErr: func(err error) bool { return errors.Is(err, context.Canceled) },
		},
		"stream closed": {
			stop:    func(_ context.CancelFunc, s model.Stream) { _ = s.Close() },
			wantErr: func(err error) bool { return err != nil && err != io.EOF },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := echo.New(time.Hour, 1).Stream(ctx, model.Request{Messages: []protocol.Message{user("abc")}})
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, s)
			if ev, err := s.Recv(); err != nil || ev.TextDelta != "E" {
				t.Fatalf("first Recv = %+v, %v; want an immediate first delta", ev, err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Recv() // blocks in the hour-long delay
				done <- err
			}()
			tc.stop(cancel, s)
			select {
			case err := <-done:
				if !tc.wantErr(err) {
					t.Errorf("Recv = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Recv did not return after cancellation")
			}
			if _, err := s.Recv(); err == nil || err == io.EOF {
				t.Errorf("Recv after stop = %v, want an error", err)
			}
		})
	}
}

func TestDelayBetweenChunks(t *testing.T) {
	// A short real delay: checks only that a positive delay still streams
	// everything (no timing assertion).
	s, err := echo.New(time.Millisecond, 2).Stream(context.Background(), model.Request{Messages: []protocol.Message{user("abcd")}})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, s)
	var b strings.Builder
	for _, ev := range drain(t, s) {
		b.WriteString(ev.TextDelta)
	}
	if b.String() != "Echo: abcd" {
		t.Errorf("reply %q", b.String())
	}
}

func TestCloseIdempotent(t *testing.T) {
	s, err := echo.New(0, 4).Stream(context.Background(), model.Request{Messages: []protocol.Message{user("x")}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
}

// closeOnCleanup closes s when the test ends and fails it if Close errs.
func closeOnCleanup(tb testing.TB, s model.Stream) {
	tb.Helper()
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
}

func TestNoteCommand(t *testing.T) {
	noteTool := []model.ToolSpec{{Name: echo.NoteToolName, Description: "d", InputSchema: []byte(`{"type":"object"}`)}}
	callID := echo.NoteCallID
	toolMsg := protocol.Message{ID: "t", Role: protocol.RoleTool, Content: "Saved.", Status: protocol.MessageComplete, ToolCallID: &callID}
	tests := map[string]struct {
		msgs     []protocol.Message
		tools    []model.ToolSpec
		wantArgs string // "" means an ordinary echo reply
	}{
		"call":                   {[]protocol.Message{user("/note  Trip plan : Pack light. ")}, noteTool, `{"title":"Trip plan","body":"Pack light."}`},
		"empty body":             {[]protocol.Message{user("/note Todo: ")}, noteTool, `{"title":"Todo","body":""}`},
		"tool not offered":       {[]protocol.Message{user("/note Trip: x")}, nil, ""},
		"after the tool result":  {[]protocol.Message{user("/note Trip: x"), {ID: "a", Role: protocol.RoleAssistant, Status: protocol.MessageComplete}, toolMsg}, noteTool, ""},
		"no separator":           {[]protocol.Message{user("/note Trip")}, noteTool, ""},
		"empty title":            {[]protocol.Message{user("/note : body")}, noteTool, ""},
		"not at the start":       {[]protocol.Message{user("please /note Trip: x")}, noteTool, ""},
		"earlier turn's command": {[]protocol.Message{user("/note Trip: x"), toolMsg, assistant("Echo: /note Trip: x"), user("hi")}, noteTool, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := model.Request{Messages: tc.msgs, Tools: tc.tools}
			s, err := echo.New(0, 0).Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, s)
			evs := drain(t, s)
			last := evs[len(evs)-1]
			if tc.wantArgs == "" {
				input, _ := model.LastUserContent(tc.msgs)
				if last.ToolCall != nil || last.FinishReason != model.FinishStop || evs[0].TextDelta != echo.Prefix+input {
					t.Fatalf("events %+v, want the echo reply", evs)
				}
				return
			}
			if len(evs) != 1 || last.ToolCall == nil || last.FinishReason != model.FinishToolUse || last.Usage == nil {
				t.Fatalf("events %+v, want one tool call event", evs)
			}
			if c := last.ToolCall; c.ID != echo.NoteCallID || c.Name != echo.NoteToolName || string(c.Args) != tc.wantArgs {
				t.Fatalf("call %+v args %s", c, c.Args)
			}
			if *last.Usage != echo.Usage(req, tc.wantArgs) {
				t.Fatalf("usage %+v", *last.Usage)
			}
		})
	}
}

// TestEchoDescribesAttachments: the echo answer names the files the last
// user message carries, and only those the request holds.
func TestEchoDescribesAttachments(t *testing.T) {
	src1, src2, gone := "attachment:att_A", "attachment:att_B", "attachment:att_C"
	png, pdf := "image/png", "application/pdf"
	req := model.Request{
		Messages: []protocol.Message{{ID: "u", Role: protocol.RoleUser, Content: "look", Status: protocol.MessageComplete, CreatedAt: "2026-07-11T03:00:00.000Z",
			Parts: []protocol.Part{{Type: "image", Source: &src1, MimeType: &png}, {Type: "file", Source: &gone, MimeType: &pdf}, {Type: "file", Source: &src2, MimeType: &pdf}}}},
		Attachments: map[string]model.Attachment{
			src1: {Kind: model.AttachmentKindImage, MediaType: png, Filename: "cat.png", Data: make([]byte, 48213)},
			src2: {Kind: model.AttachmentKindDocument, MediaType: pdf, Filename: "report.pdf", Data: make([]byte, 10)},
		},
	}
	s, err := echo.New(0, 0).Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var text strings.Builder
	for {
		ev, err := s.Recv()
		if err != nil {
			break
		}
		text.WriteString(ev.TextDelta)
	}
	want := "Echo: look\n\nAttached: cat.png (image/png, 48213 bytes)\nAttached: report.pdf (application/pdf, 10 bytes)"
	if text.String() != want {
		t.Errorf("answer %q, want %q", text.String(), want)
	}
}

// TestToolCommand: "/tool <name> <json>" calls any offered tool with the
// arguments compacted; a tool not offered, arguments that are not one
// JSON object, or a call already answered are echoed.
func TestToolCommand(t *testing.T) {
	tools := []model.ToolSpec{{Name: "calc__add", Description: "d", InputSchema: []byte(`{"type":"object"}`)}, {Name: echo.NoteToolName, Description: "d", InputSchema: []byte(`{"type":"object"}`)}}
	callID := echo.ToolCallID
	toolMsg := protocol.Message{ID: "t", Role: protocol.RoleTool, Content: "3", Status: protocol.MessageComplete, ToolCallID: &callID}
	tests := map[string]struct {
		msgs     []protocol.Message
		wantName string // "" means an ordinary echo reply
		wantArgs string
	}{
		"call":                  {[]protocol.Message{user(`/tool calc__add { "a": 1, "b": 2 } `)}, "calc__add", `{"a":1,"b":2}`},
		"no arguments":          {[]protocol.Message{user(`/tool calc__add`)}, "calc__add", `{}`},
		"a local tool":          {[]protocol.Message{user(`/tool workspace_note {"title":"T","body":"<b>"}`)}, echo.NoteToolName, `{"title":"T","body":"<b>"}`},
		"not offered":           {[]protocol.Message{user(`/tool calc__mul {"a":1}`)}, "", ""},
		"not an object":         {[]protocol.Message{user(`/tool calc__add [1,2]`)}, "", ""},
		"null":                  {[]protocol.Message{user(`/tool calc__add null`)}, "", ""},
		"invalid JSON":          {[]protocol.Message{user(`/tool calc__add {"a":}`)}, "", ""},
		"no name":               {[]protocol.Message{user(`/tool  `)}, "", ""},
		"after the tool result": {[]protocol.Message{user(`/tool calc__add {}`), {ID: "a", Role: protocol.RoleAssistant, Status: protocol.MessageComplete}, toolMsg}, "", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := model.Request{Messages: tc.msgs, Tools: tools}
			s, err := echo.New(0, 0).Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, s)
			evs := drain(t, s)
			last := evs[len(evs)-1]
			if tc.wantName == "" {
				input, _ := model.LastUserContent(tc.msgs)
				if last.ToolCall != nil || evs[0].TextDelta != echo.Prefix+input {
					t.Fatalf("events %+v, want the echo reply", evs)
				}
				return
			}
			if c := last.ToolCall; c == nil || c.ID != echo.ToolCallID || c.Name != tc.wantName || string(c.Args) != tc.wantArgs || last.FinishReason != model.FinishToolUse {
				t.Fatalf("events %+v", evs)
			}
		})
	}
}
