package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Session envelope constants (docs/protocol.md#the-session-envelope;
// docs/decisions.md D-0011).
const (
	SessionProtocol = "agentskit.chat.session"
	SessionVersion  = 1
)

// Session envelope limits (docs/protocol.md#the-session-envelope).
const (
	MaxTerminalTurns     = 64
	MaxSessionDecisions  = 1_000
	MaxConfirmations     = 1_000
	MaxDecisionInput     = 16_384 // UTF-16 code units
	MaxDecisionContent   = 65_536 // UTF-16 code units
	MaxConversationState = 128    // UTF-16 code units, at least 1
)

// ErrInvalidSession is wrapped by EncodeSession when the envelope breaks a
// wire rule; the wrapping error names the field.
var ErrInvalidSession = errors.New("protocol: invalid session envelope")

// SessionEnvelope is the agentskit.chat.session v1 envelope
// (docs/protocol.md#the-session-envelope): application session metadata, never
// messages. Encoded key order: protocol, version, sessionId, definitionId,
// definitionRevision, updatedAt, cursor, activeTurn, terminalTurns,
// conversation, confirmations. A nil TerminalTurns is absent (an empty non-nil
// slice is written as []); Confirmations is always written ([] when empty).
type SessionEnvelope struct {
	SessionID          string // SafeId
	DefinitionID       string // SafeId
	DefinitionRevision int64  // >= 1
	UpdatedAt          string // emittedAt grammar (IsDateTime)
	// Sequence is the last snapshot sequence the session issued, >= 0:
	// the wire's "cursor" (a session sequence, not a page cursor).
	Sequence      int64
	ActiveTurn    *ActiveTurn
	TerminalTurns []TerminalTurn // <= MaxTerminalTurns, unique TurnIDs
	Conversation  *Conversation
	Confirmations []Confirmation // <= MaxConfirmations, unique Tokens and ToolCallIDs
}

// ActiveTurn is a session's lease: the turn and its expiry in epoch ms.
type ActiveTurn struct {
	TurnID    string
	ExpiresAt int64 // epoch milliseconds, >= 0
}

// TerminalTurn is one entry of the terminal window; Outcome is "completed"
// or "indeterminate".
type TerminalTurn struct {
	TurnID  string
	Outcome string
}

// Conversation is a session's deterministic conversation state: State is
// 1-128 UTF-16 code units; Decisions at most MaxSessionDecisions with
// unique MessageIDs.
type Conversation struct {
	State     string
	Decisions []Decision
}

// Decision is one deterministic route decision
// (docs/protocol.md#the-session-envelope). MessageID and RouteID are SafeIds;
// Input at most 16,384 and Content at most 65,536 UTF-16 code units; Kind
// deterministic | repaired | fallback; FromState and ToState 1-128 units.
type Decision struct {
	MessageID string
	Input     string
	RouteID   string
	Kind      string
	Content   string
	FromState string
	ToState   string
}

// Confirmation binds a pending tool confirmation
// (docs/protocol.md#the-session-envelope). Token, Action and ToolCallID are
// SafeIds; Input is a bounded JSON object; ExpiresAt is epoch ms; Status
// pending | approving | rejecting | expiring | approved | rejected | expired.
type Confirmation struct {
	Token      string
	Action     string
	Input      json.RawMessage
	ToolCallID string
	ExpiresAt  int64
	Status     string
}

// DecodeSession decodes a stored session envelope
// (docs/protocol.md#the-session-envelope): invalid JSON →
// SESSION_INVALID_SNAPSHOT ("Session snapshot is not valid JSON."); an object
// whose numeric version is neither 0 nor 1 → SESSION_UNSUPPORTED_VERSION; then
// v1; then v0 (the same fields without protocol and with version 0; a stray
// protocol is ignored), migrated to v1; anything else (a missing version
// included) → SESSION_INVALID_SNAPSHOT ("Session snapshot payload is
// invalid."). Unknown keys are dropped; a case variant of a field
// (IsCaseVariant) in the envelope or any object in it is
// SESSION_INVALID_SNAPSHOT, checked first. Exactly one result is non-nil.
func DecodeSession(data []byte) (*SessionEnvelope, *Diagnostic) {
	root, err := parseJSON(data)
	if err != nil {
		d := NewDiagnostic(CodeSessionInvalidSnapshot)
		d.Message = msgSessionSnapshotNotJSON
		return nil, &d
	}
	if root.hasCaseVariant(sessionFields) {
		d := NewDiagnostic(CodeSessionInvalidSnapshot)
		return nil, &d
	}
	v, hasVersion := root.get("version")
	if hasVersion && v.kind == kindNumber && v.num != 0 && v.num != SessionVersion {
		d := NewDiagnostic(CodeSessionUnsupportedVersion)
		return nil, &d
	}
	if root.kind == kindObject && hasVersion && v.kind == kindNumber {
		p, _ := strField(&root, "protocol")
		if v.num == SessionVersion && p == SessionProtocol || v.num == 0 {
			if s, ok := sessionFromNode(&root); ok {
				return s, nil
			}
		}
	}
	d := NewDiagnostic(CodeSessionInvalidSnapshot)
	return nil, &d
}

// The fields of each object of a session envelope, for the case-variant
// rule (IsCaseVariant).
var (
	sessionFields      = []string{"protocol", "version", "sessionId", "definitionId", "definitionRevision", "updatedAt", "cursor", "activeTurn", "terminalTurns", "conversation", "confirmations"}
	activeTurnFields   = []string{"turnId", "expiresAt"}
	terminalTurnFields = []string{"turnId", "outcome"}
	conversationFields = []string{"state", "decisions"}
	decisionFields     = []string{"messageId", "input", "routeId", "kind", "content", "fromState", "toState"}
	confirmationFields = []string{"token", "action", "input", "toolCallId", "expiresAt", "status"}
)

func sessionFromNode(n *node) (*SessionEnvelope, bool) {
	var s SessionEnvelope
	var ok1, ok2, ok3, ok4, ok5 bool
	s.SessionID, ok1 = safeIDField(n, "sessionId")
	s.DefinitionID, ok2 = safeIDField(n, "definitionId")
	s.DefinitionRevision, ok3 = intField(n, "definitionRevision", 1)
	s.UpdatedAt, ok4 = strField(n, "updatedAt")
	s.Sequence, ok5 = intField(n, "cursor", 0)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !IsDateTime(s.UpdatedAt) {
		return nil, false
	}
	if a, ok := n.get("activeTurn"); ok {
		if a.kind != kindObject || a.hasCaseVariant(activeTurnFields) {
			return nil, false
		}
		id, ok1 := safeIDField(a, "turnId")
		exp, ok2 := intField(a, "expiresAt", 0)
		if !ok1 || !ok2 {
			return nil, false
		}
		s.ActiveTurn = &ActiveTurn{TurnID: id, ExpiresAt: exp}
	}
	if t, ok := n.get("terminalTurns"); ok {
		if t.kind != kindArray || len(t.kids) > MaxTerminalTurns {
			return nil, false
		}
		s.TerminalTurns = make([]TerminalTurn, len(t.kids))
		seen := make(map[string]bool, len(t.kids))
		for i := range t.kids {
			e := &t.kids[i]
			if e.kind != kindObject || e.hasCaseVariant(terminalTurnFields) {
				return nil, false
			}
			id, ok1 := safeIDField(e, "turnId")
			out, ok2 := strField(e, "outcome")
			if !ok1 || !ok2 || (out != "completed" && out != "indeterminate") || seen[id] {
				return nil, false
			}
			seen[id] = true
			s.TerminalTurns[i] = TerminalTurn{TurnID: id, Outcome: out}
		}
	}
	if c, ok := n.get("conversation"); ok {
		conv, ok := conversationFromNode(c)
		if !ok {
			return nil, false
		}
		s.Conversation = conv
	}
	c, ok := n.get("confirmations")
	if !ok || c.kind != kindArray || len(c.kids) > MaxConfirmations {
		return nil, false
	}
	s.Confirmations = make([]Confirmation, len(c.kids))
	tokens := make(map[string]bool, len(c.kids))
	calls := make(map[string]bool, len(c.kids))
	for i := range c.kids {
		e := &c.kids[i]
		if e.kind != kindObject || e.hasCaseVariant(confirmationFields) {
			return nil, false
		}
		var cf Confirmation
		var ok1, ok2, ok3, ok4, ok5 bool
		cf.Token, ok1 = safeIDField(e, "token")
		cf.Action, ok2 = safeIDField(e, "action")
		cf.ToolCallID, ok3 = safeIDField(e, "toolCallId")
		cf.ExpiresAt, ok4 = intField(e, "expiresAt", 0)
		cf.Status, ok5 = strField(e, "status")
		in, hasInput := e.get("input")
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !isConfirmationStatus(cf.Status) ||
			!hasInput || in.kind != kindObject || !boundedOK(in) || tokens[cf.Token] || calls[cf.ToolCallID] {
			return nil, false
		}
		tokens[cf.Token], calls[cf.ToolCallID] = true, true
		cf.Input = appendNode(nil, in)
		s.Confirmations[i] = cf
	}
	return &s, true
}

func conversationFromNode(c *node) (*Conversation, bool) {
	if c.kind != kindObject || c.hasCaseVariant(conversationFields) {
		return nil, false
	}
	state, ok := strField(c, "state")
	d, ok2 := c.get("decisions")
	if !ok || !ok2 || !lenBetween(state, 1, MaxConversationState) || d.kind != kindArray || len(d.kids) > MaxSessionDecisions {
		return nil, false
	}
	conv := &Conversation{State: state, Decisions: make([]Decision, len(d.kids))}
	seen := make(map[string]bool, len(d.kids))
	for i := range d.kids {
		e := &d.kids[i]
		if e.kind != kindObject || e.hasCaseVariant(decisionFields) {
			return nil, false
		}
		var x Decision
		var ok [7]bool
		x.MessageID, ok[0] = safeIDField(e, "messageId")
		x.Input, ok[1] = strField(e, "input")
		x.RouteID, ok[2] = safeIDField(e, "routeId")
		x.Kind, ok[3] = strField(e, "kind")
		x.Content, ok[4] = strField(e, "content")
		x.FromState, ok[5] = strField(e, "fromState")
		x.ToState, ok[6] = strField(e, "toState")
		if ok != [7]bool{true, true, true, true, true, true, true} || checkDecision(&x) != "" || seen[x.MessageID] {
			return nil, false
		}
		seen[x.MessageID] = true
		conv.Decisions[i] = x
	}
	return conv, true
}

// checkDecision returns the name of the first field of d breaking a rule
// other than presence, or "".
func checkDecision(d *Decision) string {
	switch {
	case !IsSafeID(d.MessageID):
		return "messageId"
	case !lenBetween(d.Input, 0, MaxDecisionInput):
		return "input"
	case !IsSafeID(d.RouteID):
		return "routeId"
	case d.Kind != "deterministic" && d.Kind != "repaired" && d.Kind != "fallback":
		return "kind"
	case !lenBetween(d.Content, 0, MaxDecisionContent):
		return "content"
	case !lenBetween(d.FromState, 1, MaxConversationState):
		return "fromState"
	case !lenBetween(d.ToState, 1, MaxConversationState):
		return "toState"
	}
	return ""
}

func isConfirmationStatus(s string) bool {
	switch s {
	case "pending", "approving", "rejecting", "expiring", "approved", "rejected", "expired":
		return true
	}
	return false
}

func sessionErr(field string) error { return fmt.Errorf("%w: %s", ErrInvalidSession, field) }

// EncodeSession validates s against docs/protocol.md#the-session-envelope and
// returns it as a compact v1 envelope. Errors wrap ErrInvalidSession and name
// the field.
func EncodeSession(s *SessionEnvelope) ([]byte, error) {
	switch {
	case !IsSafeID(s.SessionID):
		return nil, sessionErr("sessionId")
	case !IsSafeID(s.DefinitionID):
		return nil, sessionErr("definitionId")
	case s.DefinitionRevision < 1 || s.DefinitionRevision > MaxSafeInteger:
		return nil, sessionErr("definitionRevision")
	case !IsDateTime(s.UpdatedAt):
		return nil, sessionErr("updatedAt")
	case s.Sequence < 0 || s.Sequence > MaxSafeInteger:
		return nil, sessionErr("cursor")
	}
	b := []byte(`{"protocol":"agentskit.chat.session","version":1,"sessionId":"`)
	b = append(b, s.SessionID...)
	b = append(b, `","definitionId":"`...)
	b = append(b, s.DefinitionID...)
	b = append(b, `","definitionRevision":`...)
	b = appendJSONNumber(b, float64(s.DefinitionRevision))
	b = append(b, `,"updatedAt":"`...)
	b = append(b, s.UpdatedAt...)
	b = append(b, `","cursor":`...)
	b = appendJSONNumber(b, float64(s.Sequence))
	if a := s.ActiveTurn; a != nil {
		if !IsSafeID(a.TurnID) {
			return nil, sessionErr("activeTurn.turnId")
		}
		if a.ExpiresAt < 0 || a.ExpiresAt > MaxSafeInteger {
			return nil, sessionErr("activeTurn.expiresAt")
		}
		b = append(b, `,"activeTurn":{"turnId":"`...)
		b = append(b, a.TurnID...)
		b = append(b, `","expiresAt":`...)
		b = appendJSONNumber(b, float64(a.ExpiresAt))
		b = append(b, '}')
	}
	if s.TerminalTurns != nil {
		if len(s.TerminalTurns) > MaxTerminalTurns {
			return nil, sessionErr("terminalTurns")
		}
		seen := make(map[string]bool, len(s.TerminalTurns))
		b = append(b, `,"terminalTurns":[`...)
		for i, t := range s.TerminalTurns {
			if !IsSafeID(t.TurnID) || seen[t.TurnID] || (t.Outcome != "completed" && t.Outcome != "indeterminate") {
				return nil, sessionErr(fmt.Sprintf("terminalTurns[%d]", i))
			}
			seen[t.TurnID] = true
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"turnId":"`...)
			b = append(b, t.TurnID...)
			b = append(b, `","outcome":"`...)
			b = append(b, t.Outcome...)
			b = append(b, `"}`...)
		}
		b = append(b, ']')
	}
	if c := s.Conversation; c != nil {
		if !lenBetween(c.State, 1, MaxConversationState) || !validUTF8(c.State) {
			return nil, sessionErr("conversation.state")
		}
		if len(c.Decisions) > MaxSessionDecisions {
			return nil, sessionErr("conversation.decisions")
		}
		b = append(b, `,"conversation":{"state":`...)
		b, _ = appendJSONString(b, c.State)
		b = append(b, `,"decisions":[`...)
		seen := make(map[string]bool, len(c.Decisions))
		for i := range c.Decisions {
			d := &c.Decisions[i]
			if f := checkDecision(d); f != "" || seen[d.MessageID] {
				if f == "" {
					f = "messageId"
				}
				return nil, sessionErr(fmt.Sprintf("conversation.decisions[%d].%s", i, f))
			}
			seen[d.MessageID] = true
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			for j, kv := range [...]struct{ k, v string }{
				{`{"messageId":`, d.MessageID}, {`,"input":`, d.Input}, {`,"routeId":`, d.RouteID},
				{`,"kind":`, d.Kind}, {`,"content":`, d.Content}, {`,"fromState":`, d.FromState}, {`,"toState":`, d.ToState},
			} {
				b = append(b, kv.k...)
				if b, ok = appendJSONString(b, kv.v); !ok {
					return nil, sessionErr(fmt.Sprintf("conversation.decisions[%d] field %d", i, j))
				}
			}
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	if len(s.Confirmations) > MaxConfirmations {
		return nil, sessionErr("confirmations")
	}
	b = append(b, `,"confirmations":[`...)
	tokens := make(map[string]bool, len(s.Confirmations))
	calls := make(map[string]bool, len(s.Confirmations))
	for i := range s.Confirmations {
		c := &s.Confirmations[i]
		field := func(f string) error { return sessionErr(fmt.Sprintf("confirmations[%d].%s", i, f)) }
		switch {
		case !IsSafeID(c.Token) || tokens[c.Token]:
			return nil, field("token")
		case !IsSafeID(c.Action):
			return nil, field("action")
		case !IsSafeID(c.ToolCallID) || calls[c.ToolCallID]:
			return nil, field("toolCallId")
		case c.ExpiresAt < 0 || c.ExpiresAt > MaxSafeInteger:
			return nil, field("expiresAt")
		case !isConfirmationStatus(c.Status):
			return nil, field("status")
		}
		tokens[c.Token], calls[c.ToolCallID] = true, true
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":"`...)
		b = append(b, c.Token...)
		b = append(b, `","action":"`...)
		b = append(b, c.Action...)
		b = append(b, `","input":`...)
		p := borrowParser(c.Input)
		in, err := p.parse()
		ok := err == nil && in.kind == kindObject && boundedOK(&in)
		if ok {
			b = appendNode(b, &in)
		}
		p.release()
		if !ok {
			return nil, field("input")
		}
		b = append(b, `,"toolCallId":"`...)
		b = append(b, c.ToolCallID...)
		b = append(b, `","expiresAt":`...)
		b = appendJSONNumber(b, float64(c.ExpiresAt))
		b = append(b, `,"status":"`...)
		b = append(b, c.Status...)
		b = append(b, `"}`...)
	}
	return append(b, "]}"...), nil
}
