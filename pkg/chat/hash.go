package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// HashInput returns the hex SHA-256 of a turn's input, the value compared
// to tell a replay (same turn id, same input) from a reused turn id
// (docs/design.md#the-turn-pipeline).
func HashInput(input string) string {
	sum := sha256.Sum256([]byte(input))
	return hex.EncodeToString(sum[:])
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
