package turn

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// maxSafeIDLen is the SafeId length limit (AgentsKit wire, "Rules").
const maxSafeIDLen = 128

// Message positions within a turn, the suffix of its message ids.
const (
	positionUser      = "u"
	positionAssistant = "a"
)

// MessageID returns the deterministic SafeId of the message at position
// ("u" the user message, "a" the assistant message) of turn turnID
// (DESIGN §3: identical in the live stream, in history and after
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

// userMessage is the canonical record of a turn's input.
func userMessage(turnID, input, createdAt string) protocol.Message {
	return protocol.Message{
		ID:        MessageID(turnID, positionUser),
		Role:      protocol.RoleUser,
		Content:   input,
		Status:    protocol.MessageComplete,
		CreatedAt: createdAt,
	}
}
