package chat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// cursorVersion is the first byte of every page cursor.
const cursorVersion = 1

// CursorCodec signs and checks opaque page cursors (docs/design.md#history-and-artifacts-api). A cursor
// names the last ordinal a page returned and is bound to its session and
// order with HMAC-SHA256 under Key, so a cursor from another session or
// order, or an edited one, is rejected. The zero value is not usable.
type CursorCodec struct {
	// Key is the HMAC key; at least 16 bytes. Every instance serving one
	// table must share it (config CURSOR_SECRET).
	Key []byte
}

// Encode returns the cursor for continuing after ordinal in session/order.
// The result is URL-safe base64 without padding.
func (c CursorCodec) Encode(sessionID string, order Order, ordinal int64) string {
	body := make([]byte, 9)
	body[0] = cursorVersion
	binary.BigEndian.PutUint64(body[1:], uint64(ordinal))
	mac := c.mac(sessionID, order, body)
	return base64.RawURLEncoding.EncodeToString(append(body, mac...))
}

// Decode returns the ordinal of a cursor made by Encode for the same
// session and order. Any other input yields ErrInvalidCursor.
func (c CursorCodec) Decode(sessionID string, order Order, cursor string) (int64, error) {
	if len(cursor) > 128 || strings.ContainsAny(cursor, "=+/") {
		return 0, ErrInvalidCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(raw) != 9+sha256.Size || raw[0] != cursorVersion {
		return 0, ErrInvalidCursor
	}
	body, mac := raw[:9], raw[9:]
	if !hmac.Equal(mac, c.mac(sessionID, order, body)) {
		return 0, ErrInvalidCursor
	}
	ordinal := int64(binary.BigEndian.Uint64(body[1:]))
	if ordinal < 0 {
		return 0, ErrInvalidCursor
	}
	return ordinal, nil
}

func (c CursorCodec) mac(sessionID string, order Order, body []byte) []byte {
	if len(c.Key) == 0 {
		panic("chat: CursorCodec used without a key")
	}
	h := hmac.New(sha256.New, c.Key)
	// hash.Hash.Write never returns an error.
	_, _ = h.Write([]byte("turnstream.cursor\x00" + sessionID + "\x00" + string(order) + "\x00"))
	_, _ = h.Write(body)
	return h.Sum(nil)
}

// keyCursorVersion is the first byte of a key cursor (EncodeKey).
const keyCursorVersion = 2

// maxCursorKey bounds the key a key cursor carries: a list position (16
// digits and a separator) and a SafeId of up to 128 characters fit.
const maxCursorKey = 160

// EncodeKey returns an opaque cursor carrying key (at most 160 bytes: the
// last item of a page), bound to binding (what the listing is of, such
// as UsageCursorBinding) with HMAC-SHA256 under Key. URL-safe base64
// without padding. It panics on a longer key (a programming error).
func (c CursorCodec) EncodeKey(binding, key string) string {
	if len(key) > maxCursorKey {
		panic("chat: cursor key too long")
	}
	body := append([]byte{keyCursorVersion}, key...)
	mac := c.keyMAC(binding, body)
	return base64.RawURLEncoding.EncodeToString(append(body, mac...))
}

// DecodeKey returns the key of a cursor made by EncodeKey for the same
// binding. Any other input yields ErrInvalidCursor.
func (c CursorCodec) DecodeKey(binding, cursor string) (string, error) {
	if len(cursor) > 300 || strings.ContainsAny(cursor, "=+/") {
		return "", ErrInvalidCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(raw) < 1+sha256.Size || raw[0] != keyCursorVersion {
		return "", ErrInvalidCursor
	}
	body, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(mac, c.keyMAC(binding, body)) {
		return "", ErrInvalidCursor
	}
	return string(body[1:]), nil
}

func (c CursorCodec) keyMAC(binding string, body []byte) []byte {
	if len(c.Key) == 0 {
		panic("chat: CursorCodec used without a key")
	}
	h := hmac.New(sha256.New, c.Key)
	_, _ = h.Write([]byte("turnstream.keycursor\x00" + binding + "\x00"))
	_, _ = h.Write(body)
	return h.Sum(nil)
}
