package chat

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ConfirmationStatus is the status of a confirmation, as the session
// envelope names it (agentskit.chat.session v1, docs/approvals.md).
type ConfirmationStatus string

// Confirmation statuses. A confirmation is ConfirmationPending from the
// release of the turn that asked for it; the claim of a decision turn
// moves it to ConfirmationApproving or ConfirmationRejecting, and that
// turn's release to ConfirmationApproved or ConfirmationRejected. A
// pending confirmation that a later turn's release finds still pending is
// ConfirmationExpired (superseded), and so is, as shown to clients, one
// whose ExpiresAt has passed. ConfirmationExpiring is part of the envelope
// vocabulary but never stored.
const (
	ConfirmationPending   ConfirmationStatus = "pending"
	ConfirmationApproving ConfirmationStatus = "approving"
	ConfirmationRejecting ConfirmationStatus = "rejecting"
	ConfirmationExpiring  ConfirmationStatus = "expiring"
	ConfirmationApproved  ConfirmationStatus = "approved"
	ConfirmationRejected  ConfirmationStatus = "rejected"
	ConfirmationExpired   ConfirmationStatus = "expired"
)

// Confirmation limits. A session item holds at most
// MaxPendingConfirmations pending confirmations (the ones its last turn
// asked for) and the newest KeptConfirmations that are no longer pending;
// older ones are pruned at release.
const (
	MaxPendingConfirmations = 4
	KeptConfirmations       = 8
	// MaxConfirmationInput bounds a confirmation's Input (the tool call's
	// arguments as compact JSON), in bytes: a call with larger arguments
	// cannot wait for approval (it fails instead).
	MaxConfirmationInput = 8 << 10
	// DefaultConfirmationTTL is how long a confirmation can be decided
	// (CONFIRMATION_TTL).
	DefaultConfirmationTTL = 15 * time.Minute
)

// Confirmation is a tool call that waits for its owner's decision, kept on
// the session item (docs/approvals.md).
type Confirmation struct {
	// Token names the confirmation in a decision: "cf" and 32 lowercase hex
	// digits (128 random bits; NewConfirmationToken).
	Token string
	// Action is the tool's name.
	Action string
	// Input is the tool call's arguments as the model gave them: a JSON
	// object of at most MaxConfirmationInput bytes.
	Input json.RawMessage
	// ToolCallID is the id of the call in the asking turn's assistant
	// message.
	ToolCallID string
	// TurnID is the turn that asked for the call.
	TurnID string
	// ExpiresAt is when the confirmation can no longer be decided
	// (millisecond precision).
	ExpiresAt time.Time
	Status    ConfirmationStatus
	// DecidedBy is the turn id of the decision turn that claimed it; empty
	// while pending and for a superseded confirmation.
	DecidedBy string
	// CreatedAt is the release time of the asking turn (millisecond
	// precision).
	CreatedAt time.Time
}

// Decision is a decision turn's claim on a confirmation: the token and
// approve (true) or deny (false).
type Decision struct {
	Token   string
	Approve bool
}

// NewConfirmationToken returns a fresh confirmation token: "cf" and 32
// lowercase hex digits of crypto/rand, a SafeId.
func NewConfirmationToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "cf" + hex.EncodeToString(b[:])
}

// IsConfirmationToken reports whether s has the form of
// NewConfirmationToken; stores treat any other token as unknown.
func IsConfirmationToken(s string) bool {
	if len(s) != 34 || !strings.HasPrefix(s, "cf") {
		return false
	}
	for _, r := range s[2:] {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// Claimed returns the status a decision moves its confirmation to at
// claim: ConfirmationApproving or ConfirmationRejecting.
func (d *Decision) Claimed() ConfirmationStatus {
	if d.Approve {
		return ConfirmationApproving
	}
	return ConfirmationRejecting
}

// FindConfirmation returns the index of the confirmation with token in
// confs, or -1.
func FindConfirmation(confs []Confirmation, token string) int {
	return slices.IndexFunc(confs, func(c Confirmation) bool { return c.Token == token })
}

// CheckDecision reports why decision d cannot claim its confirmation among
// confs at now: ErrConfirmationNotFound (no such token),
// ErrConfirmationDecided (no longer pending), ErrConfirmationExpired
// (pending, but ExpiresAt is not after now); nil when it can.
func CheckDecision(confs []Confirmation, d *Decision, now time.Time) error {
	i := FindConfirmation(confs, d.Token)
	switch {
	case i < 0:
		return ErrConfirmationNotFound
	case confs[i].Status == ConfirmationExpired:
		return ErrConfirmationExpired
	case confs[i].Status != ConfirmationPending:
		return ErrConfirmationDecided
	case !confs[i].ExpiresAt.After(now):
		return ErrConfirmationExpired
	}
	return nil
}

// Decided returns the confirmation that claim c's decision moved (status
// approving or rejecting, DecidedBy its turn id), or nil for a turn that
// decides nothing.
func (c *Claim) Decided() *Confirmation {
	for i := range c.Session.Confirmations {
		cf := &c.Session.Confirmations[i]
		if cf.DecidedBy == c.Lease.TurnID && (cf.Status == ConfirmationApproving || cf.Status == ConfirmationRejecting) {
			return cf
		}
	}
	return nil
}

// CheckNewConfirmations reports ErrInvalidRequest unless add are at most
// MaxPendingConfirmations valid new confirmations of turnID: pending,
// well-formed tokens, unique tokens and tool call ids, an action, a JSON
// object input of at most MaxConfirmationInput bytes and an expiry.
func CheckNewConfirmations(add []Confirmation, turnID string) error {
	if len(add) > MaxPendingConfirmations {
		return fmt.Errorf("%w: more than %d confirmations", ErrInvalidRequest, MaxPendingConfirmations)
	}
	tokens, calls := map[string]bool{}, map[string]bool{}
	for _, c := range add {
		in := strings.TrimSpace(string(c.Input))
		switch {
		case !IsConfirmationToken(c.Token) || tokens[c.Token], c.ToolCallID == "" || calls[c.ToolCallID],
			c.Action == "", c.TurnID != turnID, c.Status != ConfirmationPending, c.ExpiresAt.IsZero(),
			len(c.Input) > MaxConfirmationInput || !strings.HasPrefix(in, "{") || !json.Valid(c.Input):
			return fmt.Errorf("%w: invalid confirmation", ErrInvalidRequest)
		}
		tokens[c.Token], calls[c.ToolCallID] = true, true
	}
	return nil
}

// ReleaseConfirmations returns the confirmations a release of turnID
// writes, from confs as its claim read them, and whether they differ from
// confs: the confirmation turnID decided becomes approved or rejected (or,
// with undecide, pending again: the turn ended before it acted on the
// decision), any
// other pending one expired (a later turn supersedes an undecided
// confirmation: its tool never runs), add is appended, and only the
// newest KeptConfirmations that are not pending are kept. confs is not
// modified.
func ReleaseConfirmations(confs []Confirmation, turnID string, add []Confirmation, undecide bool) ([]Confirmation, bool) {
	if len(confs) == 0 && len(add) == 0 {
		return nil, false
	}
	out := make([]Confirmation, 0, len(confs)+len(add))
	changed := len(add) > 0
	for _, c := range confs {
		switch {
		case undecide && c.DecidedBy == turnID && (c.Status == ConfirmationApproving || c.Status == ConfirmationRejecting):
			c.Status, c.DecidedBy, changed = ConfirmationPending, "", true
		case c.DecidedBy == turnID && c.Status == ConfirmationApproving:
			c.Status, changed = ConfirmationApproved, true
		case c.DecidedBy == turnID && c.Status == ConfirmationRejecting:
			c.Status, changed = ConfirmationRejected, true
		case c.Status == ConfirmationPending:
			c.Status, changed = ConfirmationExpired, true
		}
		out = append(out, c)
	}
	pending := slices.DeleteFunc(slices.Clone(out), func(c Confirmation) bool { return c.Status != ConfirmationPending })
	out = slices.DeleteFunc(out, func(c Confirmation) bool { return c.Status == ConfirmationPending })
	// Newest last: keep the last KeptConfirmations decided ones.
	slices.SortStableFunc(out, func(a, b Confirmation) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if n := len(out) - KeptConfirmations; n > 0 {
		out, changed = out[n:], true
	}
	out = append(append(out, pending...), add...)
	return out, changed
}

// VisibleStatus is the status of c as clients see it at now: a pending
// confirmation whose expiry has passed is ConfirmationExpired.
func (c Confirmation) VisibleStatus(now time.Time) ConfirmationStatus {
	if c.Status == ConfirmationPending && !c.ExpiresAt.After(now) {
		return ConfirmationExpired
	}
	return c.Status
}
