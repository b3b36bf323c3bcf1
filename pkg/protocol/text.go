package protocol

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, 2^53-1: the largest
// value of every integer field of the protocol
// (docs/protocol.md#the-turn-event-envelope, "Integer").
const MaxSafeInteger = 1<<53 - 1

// IsSafeID reports whether s is an AgentsKit SafeId: 1-128 ASCII characters,
// the first [A-Za-z0-9], the rest [A-Za-z0-9._:-]
// (docs/protocol.md#the-turn-event-envelope, "SafeId").
func IsSafeID(s string) bool {
	if len(s) == 0 || len(s) > 128 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isLowerKey reports whether s matches ^[a-z][a-z0-9-]{0,63}$, the grammar of
// component keys and interaction event names
// (docs/protocol.md#component-frames). IsComponentKey reports whether s is a
// component key (docs/protocol.md#component-frames): ^[a-z][a-z0-9-]{0,63}$.
func IsComponentKey(s string) bool { return isLowerKey(s) }

func isLowerKey(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// isDiagnosticCode reports whether s matches ^[A-Z][A-Z0-9_]*$
// (docs/protocol.md#payloads).
func isDiagnosticCode(s string) bool {
	if len(s) == 0 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// utf16Len returns the length of s in UTF-16 code units, JavaScript's
// String#length, for valid UTF-8 s. It stops counting once the count
// passes limit (pass -1 for no limit), so bounded checks stay cheap.
func utf16Len(s string, limit int) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x80:
			i++
			n++
		case c < 0xE0:
			i += 2
			n++
		case c < 0xF0:
			i += 3
			n++
		default:
			i += 4
			n += 2
		}
		if limit >= 0 && n > limit {
			return n
		}
	}
	return n
}

// lenBetween reports whether s has between lo and hi UTF-16 code units.
func lenBetween(s string, lo, hi int) bool {
	if len(s) < lo {
		return false // each code unit takes at least one byte
	}
	if len(s) <= hi {
		return utf16Len(s, hi) >= lo // bytes >= units, so <= hi holds
	}
	n := utf16Len(s, hi)
	return n >= lo && n <= hi
}

// isJSSpace reports whether r is stripped by JavaScript's String#trim:
// TAB, LF, VT, FF, CR, U+FEFF, the line terminators U+2028/U+2029 and
// every Zs character (which includes SP and U+00A0). Unlike Go's
// unicode.IsSpace it excludes U+0085, and U+180E and U+200B are not
// whitespace (docs/protocol.md#payloads).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return r > 0xFF && unicode.Is(unicode.Zs, r)
}

// isBlank reports whether s is empty after JavaScript's String#trim.
func isBlank(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '\t', '\n', '\v', '\f', '\r', ' ':
				i++
				continue
			}
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			return false
		}
		i += size
	}
	return true
}

// FormatTime formats t as JavaScript's Date#toISOString does for years 0-9999:
// UTC, millisecond precision (truncated), "YYYY-MM-DDTHH:MM:SS.mmmZ". This is
// the createdAt grammar of canonical messages
// (docs/protocol.md#the-canonical-message-record) and the emittedAt servers
// write (docs/protocol.md#server-handler-behaviour).
func FormatTime(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
}

func digits(s string, from, n int) (int, bool) {
	if from+n > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s[from : from+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// validDate checks s[0:10] as a real Gregorian YYYY-MM-DD.
func validDate(s string) bool {
	y, ok1 := digits(s, 0, 4)
	mo, ok2 := digits(s, 5, 2)
	d, ok3 := digits(s, 8, 2)
	return ok1 && ok2 && ok3 && s[4] == '-' && s[7] == '-' &&
		mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(y, mo)
}

// IsDateTime reports whether s is an ISO datetime of the emittedAt grammar
// (Zod 4 datetime({offset:true}), docs/protocol.md#the-turn-event-envelope): a
// real calendar YYYY-MM-DD, uppercase T, HH:MM (00-23, 00-59), optional :SS
// (00-59) optionally followed by a fraction of any number of digits, then Z or
// ±HH:MM.
func IsDateTime(s string) bool {
	if len(s) < 17 || !validDate(s) || s[10] != 'T' {
		return false
	}
	h, ok1 := digits(s, 11, 2)
	m, ok2 := digits(s, 14, 2)
	if !ok1 || !ok2 || s[13] != ':' || h > 23 || m > 59 {
		return false
	}
	i := 16
	if i < len(s) && s[i] == ':' {
		sec, ok := digits(s, i+1, 2)
		if !ok || sec > 59 {
			return false
		}
		i += 3
		if i < len(s) && s[i] == '.' {
			i++
			start := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i == start {
				return false
			}
		}
	}
	rest := s[i:]
	if rest == "Z" {
		return true
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return false
	}
	oh, ok1 := digits(rest, 1, 2)
	om, ok2 := digits(rest, 4, 2)
	return ok1 && ok2 && oh <= 23 && om <= 59
}

// IsCreatedAt reports whether s is a canonical message timestamp: exactly
// YYYY-MM-DDTHH:MM:SS.mmmZ naming a real instant, so that it round-trips
// through JavaScript's Date unchanged
// (docs/protocol.md#the-canonical-message-record).
func IsCreatedAt(s string) bool {
	if len(s) != 24 || !validDate(s) || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return false
	}
	h, ok1 := digits(s, 11, 2)
	m, ok2 := digits(s, 14, 2)
	sec, ok3 := digits(s, 17, 2)
	_, ok4 := digits(s, 20, 3)
	return ok1 && ok2 && ok3 && ok4 && h <= 23 && m <= 59 && sec <= 59
}

// IsBlank reports whether s is empty after JavaScript's String#trim, the
// rule a submit's input must pass (docs/protocol.md#payloads): decoders of other
// wire formats that carry a turn's input (pkg/agui) apply the same rule.
func IsBlank(s string) bool { return isBlank(s) }
