package protocol_test

import (
	_ "embed"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// testdata/session.json: docs/protocol.md#the-session-envelope cases with the
// expected result {"ok":true,"session":<v1 envelope>} or
// {"ok":false,"diagnostic":...}.
//
//go:embed testdata/session.json
var sessionCases []byte

func sessionResult(tb testing.TB, data []byte) []byte {
	tb.Helper()
	s, d := protocol.DecodeSession(data)
	if (s == nil) == (d == nil) {
		tb.Fatalf("got %v and %v; want exactly one", s, d)
	}
	if d != nil {
		return diagnosticResult(d)
	}
	b, err := protocol.EncodeSession(s)
	if err != nil {
		tb.Fatalf("decoded session does not encode: %v", err)
	}
	return []byte(`{"ok":true,"session":` + string(b) + `}`)
}

func TestSessionGolden(t *testing.T) {
	var cases []goldenCase
	if err := json.Unmarshal(sessionCases, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			assertJSONEqual(t, sessionResult(t, []byte(c.Input)), c.Want)
		})
	}
}

func TestSessionRoundTrip(t *testing.T) {
	s := &protocol.SessionEnvelope{
		SessionID: "s", DefinitionID: "d", DefinitionRevision: 3, UpdatedAt: "2026-07-11T00:00:00.000Z", Sequence: 7,
		ActiveTurn:    &protocol.ActiveTurn{TurnID: "t2", ExpiresAt: 1_783_738_845_000},
		TerminalTurns: []protocol.TerminalTurn{},
		Conversation: &protocol.Conversation{State: "s\u2028", Decisions: []protocol.Decision{{
			MessageID: "m", Input: strings.Repeat("😀", 8192), RouteID: "r", Kind: "fallback", Content: "", FromState: "a", ToState: "b"}}},
		Confirmations: []protocol.Confirmation{{Token: "c", Action: "a.b", Input: json.RawMessage(`{"x":[1,2]}`),
			ToolCallID: "call", ExpiresAt: 0, Status: "expired"}},
	}
	b, err := protocol.EncodeSession(s)
	if err != nil {
		t.Fatal(err)
	}
	const head = `{"protocol":"agentskit.chat.session","version":1,"sessionId":"s","definitionId":"d","definitionRevision":3,` +
		`"updatedAt":"2026-07-11T00:00:00.000Z","cursor":7,"activeTurn":{"turnId":"t2","expiresAt":1783738845000},"terminalTurns":[],"conversation":`
	if !strings.HasPrefix(string(b), head) {
		t.Errorf("encoding starts %s\nwant %s", b[:len(head)], head)
	}
	back, d := protocol.DecodeSession(b)
	if d != nil {
		t.Fatalf("%+v", *d)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip\n got: %+v\nwant: %+v", back, s)
	}
	t.Run("decision input past 16384 units", func(t *testing.T) {
		s.Conversation.Decisions[0].Input += "x"
		if _, err := protocol.EncodeSession(s); !errors.Is(err, protocol.ErrInvalidSession) {
			t.Fatalf("EncodeSession = %v; want ErrInvalidSession", err)
		}
		s.Conversation.Decisions[0].Input = "ok"
	})
	for name, edit := range map[string]func(s *protocol.SessionEnvelope){
		"revision 0":         func(s *protocol.SessionEnvelope) { s.DefinitionRevision = 0 },
		"duplicate token":    func(s *protocol.SessionEnvelope) { s.Confirmations = append(s.Confirmations, s.Confirmations[0]) },
		"confirmation input": func(s *protocol.SessionEnvelope) { s.Confirmations[0].Input = json.RawMessage(`[]`) },
		"terminal outcome": func(s *protocol.SessionEnvelope) {
			s.TerminalTurns = []protocol.TerminalTurn{{TurnID: "t", Outcome: "ok"}}
		},
		"65 terminal turns":   func(s *protocol.SessionEnvelope) { s.TerminalTurns = make([]protocol.TerminalTurn, 65) },
		"empty state":         func(s *protocol.SessionEnvelope) { s.Conversation.State = "" },
		"bad updatedAt":       func(s *protocol.SessionEnvelope) { s.UpdatedAt = "now" },
		"negative expiry":     func(s *protocol.SessionEnvelope) { s.ActiveTurn.ExpiresAt = -1 },
		"decision kind":       func(s *protocol.SessionEnvelope) { s.Conversation.Decisions[0].Kind = "agentic" },
		"invalid UTF-8 input": func(s *protocol.SessionEnvelope) { s.Conversation.Decisions[0].Input = "\xff" },
	} {
		t.Run("EncodeSession rejects "+name, func(t *testing.T) {
			c := *s
			c.Confirmations = append([]protocol.Confirmation(nil), s.Confirmations...)
			conv := *s.Conversation
			conv.Decisions = append([]protocol.Decision(nil), s.Conversation.Decisions...)
			c.Conversation = &conv
			at := *s.ActiveTurn
			c.ActiveTurn = &at
			edit(&c)
			if _, err := protocol.EncodeSession(&c); !errors.Is(err, protocol.ErrInvalidSession) {
				t.Fatalf("EncodeSession = %v; want ErrInvalidSession", err)
			}
		})
	}
}
