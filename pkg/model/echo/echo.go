// Package echo is turnstream's deterministic, offline model provider, the
// default (MODEL_PROVIDER=echo, docs/design.md#models-tools-definitions).
//
// Its reply is exactly Prefix ("Echo: ") followed by the Content of the
// request's last user message, byte for byte, and, when that message
// carries attachments the request holds (model.Request.Attachments), a
// blank line and one line per file: "Attached: <filename> (<media type>,
// <n> bytes)". The reply streams as text
// deltas of ChunkRunes runes each (the last may be shorter; a chunk never
// splits a UTF-8 character), with Delay between two consecutive deltas,
// then one final event carrying FinishStop and the usage.
//
// One deterministic tool call, for local demos of the tool loop (make
// dev): when the request offers a tool named NoteToolName
// ("workspace_note", pkg/tool's demo tool) and the last user message is
// "/note <title>: <body>" (the title non-empty, without ": "; leading
// and trailing spaces of both trimmed), the reply is no text but one
// tool call {ID NoteCallID, Name NoteToolName, Args {"title","body"}}
// with FinishToolUse. Once a tool message follows that user message (the
// turn's next model call), the reply is the ordinary echo text. Without
// the tool offered, "/note ..." is echoed like any input. The same
// holds for "/delete <title>" (delete.go) and for "/tool <name> <json>",
// which calls any offered tool (toolcmd.go).
//
// Reasoning, for local demos of a reasoning model: when the last user
// message is "/think <text>" (ThinkCommand), <text> with its spaces
// trimmed streams first as reasoning deltas, chunked and paced like the
// text, before the ordinary echo reply. Echo's reasoning needs no round
// trip (no Event.Reasoning blocks) and is never cut by MaxTokens.
//
// Usage is counted deterministically, one token per started group of
// four runes (a tool call's reply is its JSON arguments):
//
//	PromptTokens     = ceil(R_in / 4), R_in = runes of Request.System plus
//	                   runes of every message's Content
//	ReasoningTokens  = ceil(runes of the reasoning / 4)
//	CompletionTokens = ceil(runes of the reply / 4) + ReasoningTokens
//	TotalTokens      = PromptTokens + CompletionTokens
//
// Request.MaxTokens, when set, caps the text reply as a provider's
// completion cap would: a reply longer than 4 x MaxTokens runes is cut
// there (CompletionTokens then MaxTokens) and ends with FinishLength. A
// tool call's reply is never cut.
//
// The same Request always yields the same events.
package echo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Prefix starts every echo reply.
const Prefix = "Echo: "

// The demo tool call (see the package documentation).
const (
	// NoteCommand starts a user message that asks for the note tool.
	NoteCommand = "/note "
	// NoteToolName is the tool the command calls: tool.WorkspaceNoteName.
	NoteToolName = "workspace_note"
	// NoteCallID is the id of the tool call echo makes.
	NoteCallID = "echo-note-1"
)

// ThinkCommand starts a user message whose rest echo streams as
// reasoning before its reply (see the package documentation).
const ThinkCommand = "/think "

// ErrorCodeNoUserMessage is the model.Error Code of a Request with no
// message of role user.
const ErrorCodeNoUserMessage = "EchoNoUserMessage"

// errClosed is returned by Recv after Close.
var errClosed = errors.New("echo: stream closed")

// Model is the echo provider. The zero value streams the whole reply as one
// delta with no delay.
type Model struct {
	// Delay is the pause between two consecutive text deltas (config
	// ECHO_DELAY); 0 means none.
	Delay time.Duration
	// ChunkRunes is the size of a text delta in runes (config
	// ECHO_CHUNK_RUNES); 0 or less means the whole reply in one delta.
	ChunkRunes int
}

var _ model.Model = (*Model)(nil)

// New returns an echo Model with the given delay between deltas and chunk
// size in runes.
func New(delay time.Duration, chunkRunes int) *Model {
	return &Model{Delay: delay, ChunkRunes: chunkRunes}
}

// Stream starts an echo reply of req. It returns a *model.Error with Code
// ErrorCodeNoUserMessage (not retryable) when req has no user message, and
// ctx.Err() when ctx has already ended. ModelID is ignored; MaxTokens
// cuts a longer text reply (see the package documentation); Tools only
// matter for the tool commands.
func (m *Model) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	input, ok := model.LastUserContent(req.Messages)
	if !ok {
		return nil, &model.Error{Code: ErrorCodeNoUserMessage, Err: errors.New("echo: request has no user message")}
	}
	call := noteCall(req, input)
	if call == nil {
		call = deleteCall(req, input)
	}
	if call == nil {
		call = toolCall(req, input)
	}
	if call != nil {
		return &stream{ctx: ctx, call: call, usage: Usage(req, string(call.Args)), done: make(chan struct{})}, nil
	}
	reply, finish := Prefix+input+describeAttachments(req), model.FinishStop
	if capRunes := 4 * req.MaxTokens; req.MaxTokens > 0 && utf8.RuneCountInString(reply) > capRunes {
		reply, finish = string([]rune(reply)[:capRunes]), model.FinishLength
	}
	var deltas []model.Event
	reasoning := ""
	if rest, ok := strings.CutPrefix(input, ThinkCommand); ok {
		reasoning = strings.TrimSpace(rest)
	}
	if reasoning != "" {
		for _, c := range split(reasoning, m.ChunkRunes) {
			deltas = append(deltas, model.Event{ReasoningDelta: c})
		}
	}
	for _, c := range split(reply, m.ChunkRunes) {
		deltas = append(deltas, model.Event{TextDelta: c})
	}
	u := Usage(req, reply)
	r := ceilQuarter(utf8.RuneCountInString(reasoning))
	u.CompletionTokens += r
	u.TotalTokens += r
	return &stream{
		ctx:             ctx,
		delay:           m.Delay,
		deltas:          deltas,
		usage:           u,
		reasoningTokens: r,
		finish:          finish,
		done:            make(chan struct{}),
	}, nil
}

// Usage returns the usage the echo model reports for req and its reply
// (see the package documentation).
func Usage(req model.Request, reply string) protocol.Usage {
	in := utf8.RuneCountInString(req.System)
	for _, m := range req.Messages {
		in += utf8.RuneCountInString(m.Content)
	}
	u := protocol.Usage{
		PromptTokens:     ceilQuarter(in),
		CompletionTokens: ceilQuarter(utf8.RuneCountInString(reply)),
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func ceilQuarter(n int) int64 { return int64((n + 3) / 4) }

// split cuts s into pieces of n runes (the last may be shorter); n <= 0
// means one piece.
func split(s string, n int) []string {
	if n <= 0 || s == "" {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		end, count := 0, 0
		for end < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			count++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// noteCall returns the tool call of the note command, or nil when req
// does not ask for one (see the package documentation).
func noteCall(req model.Request, input string) *model.ToolCall {
	rest, ok := strings.CutPrefix(input, NoteCommand)
	if !ok {
		return nil
	}
	title, body, ok := strings.Cut(rest, ": ")
	title, body = strings.TrimSpace(title), strings.TrimSpace(body)
	if !ok || title == "" {
		return nil
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Name == NoteToolName
	}
	if !offered {
		return nil
	}
	// The call was already answered in this turn: a tool message follows
	// the last user message.
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != protocol.RoleUser; i-- {
		if req.Messages[i].Role == protocol.RoleTool {
			return nil
		}
	}
	args, err := json.Marshal(struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}{title, body})
	if err != nil {
		return nil // two strings always marshal
	}
	return &model.ToolCall{ID: NoteCallID, Name: NoteToolName, Args: args}
}

type stream struct {
	ctx    context.Context
	call   *model.ToolCall // the note command's call, instead of text
	delay  time.Duration
	deltas []model.Event // reasoning deltas, then text deltas
	usage  protocol.Usage
	// reasoningTokens are the part of usage's completion tokens spent
	// on reasoning.
	reasoningTokens int64
	finish          model.FinishReason // of a text reply

	next     int  // index of the next delta to emit
	finished bool // the final event was emitted

	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// Recv returns the next delta (reasoning, then text), waiting Delay
// before every delta but the first; then the final event; then io.EOF.
func (s *stream) Recv() (model.Event, error) {
	select {
	case <-s.done:
		return model.Event{}, errClosed
	default:
	}
	if err := s.ctx.Err(); err != nil {
		return model.Event{}, err
	}
	if s.next < len(s.deltas) {
		if s.next > 0 && s.delay > 0 {
			if err := s.wait(); err != nil {
				return model.Event{}, err
			}
		}
		ev := s.deltas[s.next]
		s.next++
		return ev, nil
	}
	if !s.finished {
		s.finished = true
		u := s.usage
		if s.call != nil {
			return model.Event{ToolCall: s.call, Usage: &u, FinishReason: model.FinishToolUse}, nil
		}
		return model.Event{Usage: &u, ReasoningTokens: s.reasoningTokens, FinishReason: s.finish}, nil
	}
	return model.Event{}, io.EOF
}

func (s *stream) wait() error {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-s.done:
		return errClosed
	}
}

// Close ends the stream; a Recv blocked in its delay returns at once.
func (s *stream) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	return nil
}

// describeAttachments tells what files the last user message carried, one
// line each after a blank line: "Attached: <filename> (<media type>, <n>
// bytes)"; "" when none.
func describeAttachments(req model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != protocol.RoleUser {
			continue
		}
		var b strings.Builder
		for _, a := range model.MessageAttachments(req, m) {
			if b.Len() == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "\nAttached: %s (%s, %d bytes)", a.Filename, a.MediaType, len(a.Data))
		}
		return b.String()
	}
	return ""
}
