package engine

import (
	"errors"
	"io"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Titles written by a model (definition.Definition.TitleModelID,
// docs/conversations.md#titles).
const (
	// titleTimeout bounds the title model's call: the turn's client has
	// its terminal line already, and the release waits for the title.
	titleTimeout = 3 * time.Second
	// titleInputRunes bounds each of the two messages sent to the title
	// model, in characters.
	titleInputRunes = 2000
	// titleMaxTokens caps the title model's completion.
	titleMaxTokens = 32
	// titlePrompt is the title model's system prompt.
	titlePrompt = "Write a title for the conversation below, at most six words, in the language of its first message. Answer with the title alone: no quotes, no period."
)

// modelTitle returns the title the definition's title model writes for
// the session whose first turn is item, after its save: "" when the
// definition names none, when this turn did not create the session or
// did not complete, or when the call fails or gives nothing usable (the
// first user message then gives the title, listing). The call is bounded
// by titleTimeout within the cleanup's time; its tokens and the call are
// added to item's account before it is counted in the usage ledger (the
// saved record keeps the answer's own).
func (cl *cleanup) modelTitle(item *chat.Turn) string {
	t := cl.t
	if t.agent == nil || t.agent.def.TitleModelID == "" || !t.claim.Created || item.Status != chat.TurnComplete {
		return ""
	}
	var user, answer string
	for _, m := range item.Messages {
		switch {
		case m.Role == protocol.RoleUser && user == "":
			user = m.Content
		case m.Role == protocol.RoleAssistant:
			answer = PlainText(m.Content)
		}
	}
	if strings.TrimSpace(user) == "" {
		return ""
	}
	end := t.h.clock.Now().Add(titleTimeout)
	if e := cl.cleanupEnd(); e.Before(end) {
		end = e
	}
	ctx, cancel := cl.cleanupContext(end)
	defer cancel()
	at := protocol.FormatTime(t.h.clock.Now())
	s, err := t.agent.model.Stream(ctx, model.Request{
		ModelID: t.agent.def.TitleModelID,
		System:  titlePrompt,
		Messages: []protocol.Message{
			{ID: "title-user", Role: protocol.RoleUser, Content: cutRunes(user, titleInputRunes), Status: protocol.MessageComplete, CreatedAt: at},
			{ID: "title-answer", Role: protocol.RoleAssistant, Content: cutRunes(answer, titleInputRunes), Status: protocol.MessageComplete, CreatedAt: at},
			{ID: "title-ask", Role: protocol.RoleUser, Content: "Title this conversation.", Status: protocol.MessageComplete, CreatedAt: at},
		},
		MaxTokens: titleMaxTokens,
	})
	if err != nil {
		t.log.Warn("title model failed", "err", err)
		return ""
	}
	defer func() { _ = s.Close() }()
	item.Metered.ModelCalls++
	var b strings.Builder
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.log.Warn("title model failed", "err", err)
			return ""
		}
		if ev.Usage != nil {
			item.Metered.InputTokens += ev.Usage.PromptTokens
			item.Metered.OutputTokens += ev.Usage.CompletionTokens
		}
		if b.Len() < 4*titleInputRunes {
			b.WriteString(ev.TextDelta)
		}
	}
	return chat.AutoTitle(strings.Trim(strings.TrimSpace(b.String()), titleTrim))
}

// titleTrim are the characters trimmed from the ends of a model's title:
// quotes, a final period, markdown emphasis and heading marks.
const titleTrim = "\"'\u201c\u201d\u2018\u2019.`*# "

// cutRunes returns s cut to at most n characters.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
