package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// maxSafeIDLen is the SafeId length limit
// (docs/protocol.md#the-turn-event-envelope, "Rules").
const maxSafeIDLen = 128

// Message positions within a turn, the suffix of its message ids.
const (
	positionUser      = "u"
	positionAssistant = "a"
)

// MessageID returns the deterministic SafeId of the message at position
// ("u" the user message, "a" the assistant message) of turn turnID
// (docs/design.md#snapshots: identical in the live stream, in history and after
// reload). It is turnID + "." + position when that fits the 128-character
// SafeId limit; otherwise "h" + the 64 hex digits of SHA-256(turnID) +
// "-" + position, a form no short id produces (those end in "." +
// position). turnID must be a SafeId.
func MessageID(turnID, position string) string {
	if len(turnID)+1+len(position) <= maxSafeIDLen {
		return turnID + "." + position
	}
	sum := sha256.Sum256([]byte(turnID))
	return "h" + hex.EncodeToString(sum[:]) + "-" + position
}

// userMessage is the canonical record of a turn's input: its text, and
// parts naming its attachments (nil: none).
func userMessage(turnID, input, createdAt string, parts []protocol.Part) protocol.Message {
	return protocol.Message{
		ID:        MessageID(turnID, positionUser),
		Role:      protocol.RoleUser,
		Content:   input,
		Status:    protocol.MessageComplete,
		CreatedAt: createdAt,
		Parts:     parts,
	}
}

// MetadataToolRounds is the assistant message metadata member that
// records where each model call's tool calls sit in the message's text,
// so that a later turn can replay the turn to the model in the order the
// model saw it: text, calls, results, then the text written after the
// results. Its value is an array with one object per model call that
// asked for tools, in order:
//
//	{"textEnd": <int>, "toolCalls": <int>}
//
// textEnd is how many bytes (UTF-8) of the message's plain text
// (PlainText of its content) were written before that model call's
// tool calls, counted from the start of the message; toolCalls is how
// many entries of the message's toolCalls that model call added, in
// order. Text after the last round's textEnd was written after the last
// results. A turn without tool calls has no such member.
const MetadataToolRounds = "toolRounds"

// toolRound is one element of MetadataToolRounds.
type toolRound struct {
	TextEnd   int `json:"textEnd"`
	ToolCalls int `json:"toolCalls"`
}

// loopLog is what the model-tool loop keeps about a turn besides its
// state: the tool call ids given out (unique within the turn) and the
// tool rounds of MetadataToolRounds. ids is used by the model goroutine
// only; the rounds are read by the writer too, under mu.
type loopLog struct {
	ids map[string]bool

	mu      sync.Mutex
	textLen int // bytes of text added to the assistant content so far
	rounds  []toolRound
}

// callID returns the id to record for a tool call the model sent with id:
// id itself the first time the turn sees it, otherwise (empty, or already
// used in this turn) "call-<step>-<n>", n the call's position in its model
// call, with "-<k>" added (k = 2, 3, ...) while that is taken too. The
// result is recorded as used.
func (l *loopLog) callID(id string, step, n int) string {
	if l.ids == nil {
		l.ids = map[string]bool{}
	}
	if id == "" || l.ids[id] {
		base := fmt.Sprintf("call-%d-%d", step, n)
		id = base
		for k := 2; l.ids[id]; k++ {
			id = fmt.Sprintf("%s-%d", base, k)
		}
	}
	l.ids[id] = true
	return id
}

// addText counts n bytes added to the assistant content.
func (l *loopLog) addText(n int) {
	l.mu.Lock()
	l.textLen += n
	l.mu.Unlock()
}

// addRound records a model call that asked for calls tool calls, after
// all of its text.
func (l *loopLog) addRound(calls int) {
	l.mu.Lock()
	l.rounds = append(l.rounds, toolRound{TextEnd: l.textLen, ToolCalls: calls})
	l.mu.Unlock()
}

// metadata returns meta (nil or a JSON object) with MetadataToolRounds
// set to the rounds so far, or meta itself when there are none. pending
// adds a round for a model call still streaming its calls (the largest
// shape the record can take, for size checks).
func (l *loopLog) metadata(meta json.RawMessage, pending bool) json.RawMessage {
	l.mu.Lock()
	rounds := slices.Clone(l.rounds)
	if pending {
		rounds = append(rounds, toolRound{TextEnd: l.textLen, ToolCalls: 1})
	}
	l.mu.Unlock()
	if len(rounds) == 0 {
		return meta
	}
	obj := map[string]json.RawMessage{}
	if len(meta) > 0 && json.Unmarshal(meta, &obj) != nil {
		return meta
	}
	enc, err := json.Marshal(rounds)
	if err != nil {
		return meta
	}
	obj[MetadataToolRounds] = enc
	out, err := json.Marshal(obj) // members sorted by name: deterministic
	if err != nil {
		return meta
	}
	return out
}

// splitRounds returns an assistant message whose content is plain text
// as the model calls of its turn wrote it, using its MetadataToolRounds
// (the k-th message, from 1, with m's id followed by k: the round's id
// as the turn's tool loop sent it, roundID):
// per round, the text written before that round's calls (a leading
// stepSeparator dropped) with those calls; then the text written after
// the last results, with any calls no round accounts for (a turn that
// failed while the model streamed them). A message without rounds, or
// whose rounds do not fit its text and calls (content cut at the ordered
// content limits, a record written by hand), is returned as it is.
func splitRounds(m protocol.Message) []protocol.Message {
	rounds, ok := parseRounds(m.Metadata)
	if !ok || len(m.ToolCalls) == 0 {
		return []protocol.Message{m}
	}
	text := m.Content
	var out []protocol.Message
	start, used := 0, 0
	for _, r := range rounds {
		end := min(r.TextEnd, len(text))
		if end < start || end < len(text) && !utf8.RuneStart(text[end]) || used+r.ToolCalls > len(m.ToolCalls) {
			return []protocol.Message{m}
		}
		seg := m
		seg.ID = m.ID + strconv.Itoa(len(out)+1)
		seg.Content = trimSeparator(text[start:end], len(out) > 0)
		seg.ToolCalls = m.ToolCalls[used : used+r.ToolCalls : used+r.ToolCalls]
		seg.Metadata = nil
		out = append(out, seg)
		start, used = end, used+r.ToolCalls
	}
	last := m
	last.ID = m.ID + strconv.Itoa(len(out)+1)
	last.Content = trimSeparator(text[start:], len(out) > 0)
	last.ToolCalls = m.ToolCalls[used:len(m.ToolCalls):len(m.ToolCalls)]
	last.Metadata = nil
	if len(last.ToolCalls) == 0 {
		last.ToolCalls = nil
	}
	if last.Content != "" || len(last.ToolCalls) > 0 {
		out = append(out, last)
	}
	return out
}

// trimSeparator drops the stepSeparator the loop put before a later model
// call's text.
func trimSeparator(s string, later bool) string {
	if later {
		return strings.TrimPrefix(s, stepSeparator)
	}
	return s
}

// parseRounds reads MetadataToolRounds from an assistant message's
// metadata; ok is false when it is absent or malformed.
func parseRounds(meta json.RawMessage) ([]toolRound, bool) {
	if len(meta) == 0 {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(meta, &obj) != nil {
		return nil, false
	}
	raw, ok := obj[MetadataToolRounds]
	if !ok {
		return nil, false
	}
	var rounds []toolRound
	if json.Unmarshal(raw, &rounds) != nil || len(rounds) == 0 {
		return nil, false
	}
	for _, r := range rounds {
		if r.TextEnd < 0 || r.ToolCalls < 0 {
			return nil, false
		}
	}
	return rounds, true
}
