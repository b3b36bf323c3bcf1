package engine

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// state is the single pending slot (docs/design.md#snapshots): the latest
// state of the turn, changed by the model goroutine and read by the writer
// when it is ready to emit.
//
// The assistant content is plain text until a tool returns a component frame;
// from then on it is the ordered content envelope agentskit.chat.content/1
// (docs/protocol.md#ordered-assistant-content): env holds the encoded parts up
// to the last component, tail the text after it, encoded on demand with a copy
// of enc.
type state struct {
	mu    sync.Mutex
	plain strings.Builder // all text before the first component
	env   string          // "" until the first component
	enc   protocol.ContentEncoder
	tail  strings.Builder // text after the last component
	// reasoning is the model's reasoning so far, the reasoning of two
	// model calls joined with stepSeparator, at most MaxReasoningBytes
	// (reasoningCut once more was left out).
	reasoning    strings.Builder
	reasoningCut bool
	// warnings are what the turn went without (api.MetadataWarnings).
	warnings []api.Warning
	// toolServers names the server of each remote tool offered
	// (listTools), for the trace.
	toolServers map[string]string
	toolCalls   []protocol.ToolCall
	usage       protocol.Usage
	// estimated is the part of usage that is an estimate (addEstimate).
	estimated protocol.Usage
	// inflight is the estimated usage of the model call streaming now
	// while its provider has not reported its own (setInflight): views
	// add it to usage, so that a snapshot, the checkpoint of its state and
	// the record built from it show the same figures.
	inflight  protocol.Usage
	artifacts []chat.ArtifactReference
	version   uint64
	frozen    bool
	// overflow is set when content went past the envelope's limits
	// (protocol.MaxContentBytes, MaxContentRecords) and was cut.
	overflow bool
}

// view is a consistent copy of the state.
type view struct {
	content     string
	reasoning   string
	warnings    []api.Warning
	toolServers map[string]string
	toolCalls   []protocol.ToolCall
	usage       protocol.Usage
	estimated   protocol.Usage // the part of usage that is an estimate
	artifacts   []chat.ArtifactReference
	version     uint64
	overflow    bool
}

// change runs f under the lock unless the state is frozen, and counts a
// new version. It reports whether f ran.
func (s *state) change(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen {
		return false
	}
	f()
	s.version++
	return true
}

// hasContent reports whether the content holds any text or component.
func (s *state) hasContent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plain.Len() > 0 || s.env != ""
}

// addText appends a text delta to the assistant content.
func (s *state) addText(delta string) bool {
	if delta == "" {
		return false
	}
	return s.change(func() {
		if s.env == "" {
			s.plain.WriteString(delta)
		} else {
			s.tail.WriteString(delta)
		}
	})
}

// MaxReasoningBytes bounds the reasoning a turn keeps in its assistant
// message (metadata.reasoning, docs/reasoning.md): 64 KiB of UTF-8, about
// 16,000 tokens. Reasoning past it is left out of the message (the
// provider's own reasoning blocks, sent back to it, keep all of theirs).
const MaxReasoningBytes = 65_536

// addReasoning appends a reasoning delta, with stepSeparator before it
// when it opens a later model call's reasoning (first). Past
// MaxReasoningBytes the rest is left out, cut at a character boundary.
func (s *state) addReasoning(delta string, first bool) bool {
	if delta == "" {
		return false
	}
	return s.change(func() {
		if s.reasoningCut {
			return
		}
		if first && s.reasoning.Len() > 0 {
			delta = stepSeparator + delta
		}
		if room := MaxReasoningBytes - s.reasoning.Len(); len(delta) > room {
			delta = cutUTF8(delta, room)
			s.reasoningCut = true
		}
		s.reasoning.WriteString(delta)
	})
}

// cutUTF8 returns the longest prefix of s of at most n bytes that ends
// at a character boundary.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// addUsage adds one model call's usage as its provider reported it: a
// turn's usage is the sum over its model calls. It replaces the call's
// in-flight estimate (setInflight).
func (s *state) addUsage(u protocol.Usage) bool {
	return s.change(func() {
		s.usage = sumUsage(s.usage, u)
		s.inflight = protocol.Usage{}
	})
}

// setInflight records u as the estimated usage of the model call
// streaming now (loop.go, callEstimate). Views show it in their usage
// from now on; it counts no new version (a snapshot goes out for a
// change of the content, and carries the estimate as it is then).
func (s *state) setInflight(u protocol.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.frozen {
		s.inflight = u
	}
}

// endInflight ends the in-flight estimate of the model call streaming
// now: with keep it stays, as part of the turn's usage and of the part of
// it that is an estimate (MetadataUsageEstimate); without, it is dropped
// (no call was made). It reports whether the state changed (false once
// the state is frozen: the frozen view already shows the estimate).
func (s *state) endInflight(keep bool) bool {
	return s.change(func() {
		if keep {
			s.usage = sumUsage(s.usage, s.inflight)
			s.estimated = sumUsage(s.estimated, s.inflight)
		}
		s.inflight = protocol.Usage{}
	})
}

// sumUsage returns a + b, field by field.
func sumUsage(a, b protocol.Usage) protocol.Usage {
	return protocol.Usage{
		PromptTokens:     a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		TotalTokens:      a.TotalTokens + b.TotalTokens,
	}
}

// addCall appends a toolCalls entry and returns its index.
func (s *state) addCall(tc protocol.ToolCall) (int, bool) {
	i := -1
	ok := s.change(func() {
		// A new backing array when full; views keep their capped slices.
		s.toolCalls = append(s.toolCalls, tc)
		i = len(s.toolCalls) - 1
	})
	return i, ok
}

// setCall replaces the toolCalls entry at i (a status change). The slice
// is copied: views handed out earlier keep their entries.
func (s *state) setCall(i int, tc protocol.ToolCall) bool {
	return s.change(func() {
		s.toolCalls = slices.Clone(s.toolCalls)
		s.toolCalls[i] = tc
	})
}

// addArtifacts records artifact references a tool returned.
func (s *state) addArtifacts(refs []chat.ArtifactReference) bool {
	if len(refs) == 0 {
		return false
	}
	return s.change(func() { s.artifacts = append(s.artifacts, refs...) })
}

// addComponent appends a render frame to the ordered content, switching
// the content to the envelope at the first one. A frame that does not fit
// the envelope's limits is left out (overflow) and false is returned.
func (s *state) addComponent(f *protocol.RenderFrame) bool {
	added := false
	s.change(func() {
		enc, env := s.enc, s.env
		text := s.tail.String()
		if env == "" {
			text = s.plain.String()
		}
		if text != "" {
			chunk, err := enc.Encode(protocol.ContentPart{Kind: protocol.ContentText, Text: text})
			if err != nil {
				s.overflow = true
				return
			}
			env += chunk
		}
		chunk, err := enc.Encode(protocol.ContentPart{Kind: protocol.ContentComponent, Frame: f})
		if err != nil {
			s.overflow = true
			return
		}
		s.enc, s.env = enc, env+chunk
		s.tail.Reset()
		added = true
	})
	return added
}

// contentLocked renders the assistant content; s.mu is held.
func (s *state) contentLocked() string {
	if s.env == "" {
		return s.plain.String()
	}
	if s.tail.Len() == 0 {
		return s.env
	}
	enc := s.enc // a copy: the tail stays open for more text
	chunk, err := enc.Encode(protocol.ContentPart{Kind: protocol.ContentText, Text: s.tail.String()})
	if err != nil {
		// Past the envelope's limits: the text after the last part that
		// fitted is cut (the model's own messages keep all of it).
		s.overflow = true
		return s.env
	}
	return s.env + chunk
}

// view returns a copy of the state. Strings share the builders' bytes,
// which later appends never modify; toolCalls and artifacts are capped
// so that later appends never write into them, and entries are replaced
// by copy (setCall).
func (s *state) view() view {
	s.mu.Lock()
	defer s.mu.Unlock()
	return view{
		content:     s.contentLocked(),
		reasoning:   s.reasoning.String(),
		warnings:    slices.Clone(s.warnings),
		toolServers: s.toolServers, // set once, never changed
		toolCalls:   s.toolCalls[:len(s.toolCalls):len(s.toolCalls)],
		usage:       sumUsage(s.usage, s.inflight),
		estimated:   s.estimated,
		artifacts:   s.artifacts[:len(s.artifacts):len(s.artifacts)],
		version:     s.version,
		overflow:    s.overflow,
	}
}

// freeze stops further changes and returns the final view.
func (s *state) freeze() view {
	s.mu.Lock()
	s.frozen = true
	s.mu.Unlock()
	return s.view()
}

// finishCalls returns calls with every entry that is not complete or
// error replaced by an error entry with model.TextToolNotCompleted (a
// turn that ended while its tools were pending or running). With
// awaiting, entries waiting for approval (requires_confirmation) stay.
func finishCalls(calls []protocol.ToolCall, awaiting bool) []protocol.ToolCall {
	var out []protocol.ToolCall
	for i, tc := range calls {
		if tc.Status == protocol.ToolCallComplete || tc.Status == protocol.ToolCallError ||
			awaiting && tc.Status == protocol.ToolCallRequiresConfirmation {
			continue
		}
		if out == nil {
			out = slices.Clone(calls)
		}
		msg := model.TextToolNotCompleted
		out[i].Status, out[i].Result, out[i].Error = protocol.ToolCallError, nil, &msg
	}
	if out == nil {
		return calls
	}
	return out
}
