package chat_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/turnstream/turnstream/pkg/chat"
)

func TestCursorCodec(t *testing.T) {
	codec := chat.CursorCodec{Key: []byte("0123456789abcdef0123456789abcdef")}
	cursor := codec.Encode("session-a", chat.OrderDesc, 42)
	if got, err := codec.Decode("session-a", chat.OrderDesc, cursor); err != nil || got != 42 {
		t.Fatalf("Decode = %d, %v; want 42, nil", got, err)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	other := chat.CursorCodec{Key: []byte("fedcba9876543210fedcba9876543210")}
	tests := map[string]struct {
		session string
		order   chat.Order
		cursor  string
	}{
		"other session":        {"session-b", chat.OrderDesc, cursor},
		"other order":          {"session-a", chat.OrderAsc, cursor},
		"other key":            {"session-a", chat.OrderDesc, other.Encode("session-a", chat.OrderDesc, 42)},
		"first char flipped":   {"session-a", chat.OrderDesc, flip(cursor, 0)},
		"last char flipped":    {"session-a", chat.OrderDesc, flip(cursor, len(cursor)-1)},
		"truncated":            {"session-a", chat.OrderDesc, cursor[:len(cursor)-2]},
		"padded":               {"session-a", chat.OrderDesc, cursor + "="},
		"empty":                {"session-a", chat.OrderDesc, ""},
		"not base64":           {"session-a", chat.OrderDesc, "!!!!"},
		"oversized":            {"session-a", chat.OrderDesc, string(make([]byte, 200))},
		"std alphabet symbols": {"session-a", chat.OrderDesc, "ab+/cd"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := codec.Decode(tc.session, tc.order, tc.cursor); !errors.Is(err, chat.ErrInvalidCursor) {
				t.Fatalf("Decode = %v; want ErrInvalidCursor", err)
			}
		})
	}
}

func TestValidateArtifacts(t *testing.T) {
	ok := []chat.ArtifactReference{
		{EntryPath: "reports/index.html", ArtifactType: chat.ArtifactWebpage},
		{EntryPath: "a/b..c/..d/e..", ArtifactType: chat.ArtifactDocument}, // ".." only as a whole segment
		{EntryPath: "slides/index.html", ArtifactType: chat.ArtifactPresentation},
		{EntryPath: "data.xlsx", ArtifactType: chat.ArtifactSpreadsheet},
		{EntryPath: "img/ü.png", ArtifactType: chat.ArtifactImage},
		{EntryPath: "דוחות/סיכום.pdf", ArtifactType: chat.ArtifactDocument},                    // right-to-left text itself is fine
		{EntryPath: "team/\U0001F469\U0001F4BB notes.md", ArtifactType: chat.ArtifactDocument}, // emoji, not joined
		{EntryPath: "\u2764\uFE0F.md", ArtifactType: chat.ArtifactDocument},                    // variation selector (emoji presentation)
		{EntryPath: "\uD55C\uAE00/\u1100\u1161.md", ArtifactType: chat.ArtifactDocument},       // Hangul syllables and jamo
		{EntryPath: "a\u00A0b\u202Fc.txt", ArtifactType: chat.ArtifactDocument},                // no-break spaces are not controls
	}
	if err := chat.ValidateArtifacts(ok); err != nil {
		t.Fatalf("valid references rejected: %v", err)
	}
	bad := map[string]chat.ArtifactReference{
		"unknown type":    {EntryPath: "a.txt", ArtifactType: "video"},
		"empty type":      {EntryPath: "a.txt"},
		"empty path":      {ArtifactType: chat.ArtifactDocument},
		"absolute":        {EntryPath: "/etc/passwd", ArtifactType: chat.ArtifactDocument},
		"dotdot segment":  {EntryPath: "a/../../b", ArtifactType: chat.ArtifactDocument},
		"dotdot only":     {EntryPath: "..", ArtifactType: chat.ArtifactDocument},
		"backslash":       {EntryPath: `a\b`, ArtifactType: chat.ArtifactDocument},
		"NUL":             {EntryPath: "a\x00b", ArtifactType: chat.ArtifactDocument},
		"invalid UTF-8":   {EntryPath: "a\xffb", ArtifactType: chat.ArtifactDocument},
		"path over limit": {EntryPath: string(make([]byte, 1025)), ArtifactType: chat.ArtifactDocument},
	}
	// Characters that change how a printed path reads (IsUnsafePathRune),
	// one case per kind.
	for name, r := range unsafePathRunes {
		bad[name] = chat.ArtifactReference{EntryPath: "dir/a" + string(r) + "b.txt", ArtifactType: chat.ArtifactDocument}
	}
	for name, ref := range bad {
		t.Run(name, func(t *testing.T) {
			err := chat.ValidateArtifacts([]chat.ArtifactReference{ok[0], ref})
			if !errors.Is(err, chat.ErrInvalidArtifact) {
				t.Fatalf("ValidateArtifacts = %v; want ErrInvalidArtifact", err)
			}
			// The error names the index and a fixed reason, never the
			// reference's content.
			if !strings.Contains(err.Error(), "artifacts[1]: ") {
				t.Errorf("error %q does not name artifacts[1]", err)
			}
			for _, v := range []string{ref.EntryPath, string(ref.ArtifactType)} {
				if len(v) > 2 && strings.Contains(err.Error(), v) { // ".." is in a fixed reason
					t.Errorf("error %q quotes the reference", err)
				}
			}
			if strings.ContainsFunc(err.Error(), chat.IsUnsafePathRune) {
				t.Errorf("error %q carries an unsafe character", err)
			}
		})
	}
}

// unsafePathRunes holds one character of each kind IsUnsafePathRune
// rejects.
var unsafePathRunes = map[string]rune{
	"C0 newline":             '\n',
	"C0 carriage return":     '\r',
	"C0 tab":                 '\t',
	"C0 ESC":                 0x1B,
	"C0 unit separator":      0x1F,
	"DEL":                    0x7F,
	"C1 first (PAD)":         0x80,
	"C1 NEXT LINE":           0x85,
	"C1 CSI":                 0x9B,
	"C1 last (APC)":          0x9F,
	"LRE embedding":          0x202A,
	"RLO override":           0x202E,
	"PDF pop":                0x202C,
	"LRI isolate":            0x2066,
	"PDI pop isolate":        0x2069,
	"LRM mark":               0x200E,
	"RLM mark":               0x200F,
	"ALM Arabic letter mark": 0x061C,
	"LINE SEPARATOR":         0x2028,
	"PARAGRAPH SEPARATOR":    0x2029,
	// Format characters (Cf) besides the bidirectional ones.
	"ZERO WIDTH SPACE":                0x200B,
	"ZERO WIDTH NON-JOINER":           0x200C,
	"ZERO WIDTH JOINER":               0x200D,
	"WORD JOINER":                     0x2060,
	"INVISIBLE TIMES":                 0x2062,
	"inhibit symmetric swapping":      0x206A,
	"nominal digit shapes":            0x206F,
	"BOM / ZERO WIDTH NO-BREAK SPACE": 0xFEFF,
	"SOFT HYPHEN":                     0x00AD,
	"ARABIC NUMBER SIGN":              0x0600,
	"MONGOLIAN VOWEL SEPARATOR":       0x180E,
	"interlinear annotation anchor":   0xFFF9,
	"interlinear annotation sep.":     0xFFFA,
	"interlinear annotation end":      0xFFFB,
	"musical symbol begin beam":       0x1D173,
	// Other default-ignorable code points: fillers that draw nothing.
	"HANGUL CHOSEONG FILLER":      0x115F,
	"HANGUL JUNGSEONG FILLER":     0x1160,
	"HANGUL FILLER":               0x3164,
	"HALFWIDTH HANGUL FILLER":     0xFFA0,
	"COMBINING GRAPHEME JOINER":   0x034F,
	"unassigned ignorable U+2065": 0x2065,
	// The tag block U+E0000-U+E007F.
	"tag block start (unassigned)": 0xE0000,
	"LANGUAGE TAG":                 0xE0001,
	"tag unassigned U+E0002":       0xE0002,
	"TAG SPACE":                    0xE0020,
	"TAG LATIN CAPITAL LETTER A":   0xE0041,
	"CANCEL TAG":                   0xE007F,
}

func TestIsUnsafePathRune(t *testing.T) {
	for name, r := range unsafePathRunes {
		if !chat.IsUnsafePathRune(r) {
			t.Errorf("%s (U+%04X) allowed; want rejected", name, r)
		}
	}
	// Neighbours of the rejected ranges and ordinary characters; variation
	// selectors (emoji presentation) are not format characters.
	for _, r := range []rune{' ', '~', 0xA0, 0xA1, 0xAC, 0xAE, 0x061B, 0x061D, 0x05FF, 0x0606, 0x200A, 0x2010, 0x2027, 0x202F, 0x205F, 0x2070,
		0x115E, 0x1161, 0x3163, 0x3165, 0xFF9F, 0xFFA1, 0xFEFE, 0xFF00, 0xFFFC, 0xFFFD, 0xFE0F, 0xE0100, 0xE01EF, 0x1D172, 0x1F469, 'ü', 0x05D0} {
		if chat.IsUnsafePathRune(r) {
			t.Errorf("U+%04X rejected; want allowed", r)
		}
	}
	// Every format character and every other default-ignorable code point
	// of the unicode package's tables, and the whole tag block.
	for _, table := range []*unicode.RangeTable{unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, {R32: []unicode.Range32{{Lo: 0xE0000, Hi: 0xE007F, Stride: 1}}}} {
		for _, rg := range table.R16 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				if !chat.IsUnsafePathRune(r) {
					t.Errorf("U+%04X allowed; want rejected", r)
				}
			}
		}
		for _, rg := range table.R32 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				if !chat.IsUnsafePathRune(r) {
					t.Errorf("U+%04X allowed; want rejected", r)
				}
			}
		}
	}
}

func TestDedupeArtifacts(t *testing.T) {
	in := []chat.ArtifactReference{
		{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument},
		{EntryPath: "b/a.md", ArtifactType: chat.ArtifactDocument},
		{EntryPath: "a.md", ArtifactType: chat.ArtifactWebpage},
	}
	want := []chat.ArtifactReference{
		{EntryPath: "a.md", ArtifactType: chat.ArtifactWebpage},
		{EntryPath: "b/a.md", ArtifactType: chat.ArtifactDocument},
	}
	if got := chat.DedupeArtifacts(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("DedupeArtifacts = %v; want %v", got, want)
	}
	if got := chat.DedupeArtifacts(nil); got == nil || len(got) != 0 {
		t.Fatalf("DedupeArtifacts(nil) = %#v; want empty, non-nil", got)
	}
}

func TestHashInput(t *testing.T) {
	if chat.HashInput("hello") == chat.HashInput("hello ") {
		t.Fatal("different inputs hash equal")
	}
	if got := chat.HashInput("hello"); got != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("HashInput(hello) = %s", got)
	}
}

func ExamplePrincipal_TrustedFor() {
	host := chat.Principal{Subject: "host", Tenant: "A", Trusted: true}
	fmt.Println(host.TrustedFor(chat.Principal{Subject: "alice", Tenant: "A"}))
	fmt.Println(host.TrustedFor(chat.Principal{Subject: "carol", Tenant: "C"}))
	// Output:
	// true
	// false
}

// The request rules both stores apply, on the request types.
func TestRequestRules(t *testing.T) {
	t.Run("list defaults and limits", func(t *testing.T) {
		r, err := chat.ListRequest{SessionID: "s"}.Normalized()
		if err != nil || r.Order != chat.OrderDesc || r.Limit != chat.DefaultPageLimit {
			t.Errorf("defaults: %+v, %v", r, err)
		}
		for name, bad := range map[string]chat.ListRequest{
			"order":          {Order: "sideways"},
			"negative limit": {Limit: -1},
			"limit too big":  {Limit: chat.MaxPageLimit + 1},
		} {
			if _, err := bad.Normalized(); !errors.Is(err, chat.ErrInvalidRequest) {
				t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
			}
		}
		if r, err := (chat.ListRequest{Order: chat.OrderAsc, Limit: chat.MaxPageLimit}).Normalized(); err != nil || r.Order != chat.OrderAsc {
			t.Errorf("asc at the largest limit: %+v, %v", r, err)
		}
	})
	t.Run("claim", func(t *testing.T) {
		ok := chat.ClaimRequest{SessionID: "s", TurnID: "t", LeaseDuration: time.Second}
		if err := ok.Validate(); err != nil {
			t.Errorf("valid claim: %v", err)
		}
		for name, mutate := range map[string]func(*chat.ClaimRequest){
			"no session": func(r *chat.ClaimRequest) { r.SessionID = "" },
			"no turn":    func(r *chat.ClaimRequest) { r.TurnID = "" },
			"no lease":   func(r *chat.ClaimRequest) { r.LeaseDuration = 0 },
		} {
			r := ok
			mutate(&r)
			if err := r.Validate(); !errors.Is(err, chat.ErrInvalidRequest) {
				t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
			}
		}
		if err := (chat.RenewRequest{}).Validate(); !errors.Is(err, chat.ErrInvalidRequest) {
			t.Errorf("renew without a claim: %v", err)
		}
	})
	t.Run("save", func(t *testing.T) {
		c := &chat.Claim{Session: chat.Session{ID: "s"}, Lease: chat.Lease{TurnID: "t", Token: "k", Ordinal: 3, InputHash: "h"}}
		turn := &chat.Turn{SessionID: "s", TurnID: "t", Ordinal: 3, Status: chat.TurnComplete}
		if refs, err := c.CheckSave(turn); err != nil || refs != nil {
			t.Errorf("save without artifacts: %v, %v; want nil, nil", refs, err)
		}
		doc := chat.ArtifactReference{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}
		turn.Artifacts = []chat.ArtifactReference{doc, doc}
		if refs, err := c.CheckSave(turn); err != nil || len(refs) != 1 {
			t.Errorf("save with a repeated artifact: %v, %v; want it once", refs, err)
		}
		turn.Artifacts = []chat.ArtifactReference{{EntryPath: "../x", ArtifactType: chat.ArtifactDocument}}
		if _, err := c.CheckSave(turn); !errors.Is(err, chat.ErrInvalidArtifact) {
			t.Errorf("save with an invalid artifact: %v, want ErrInvalidArtifact", err)
		}
		turn.Artifacts, turn.Ordinal = nil, 4
		if _, err := c.CheckSave(turn); !errors.Is(err, chat.ErrInvalidRequest) {
			t.Errorf("save of another ordinal: %v, want ErrInvalidRequest", err)
		}
		r := chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted}
		if w := r.Window(0); len(w) != 1 || w[0] != (chat.TerminalEntry{TurnID: "t", Outcome: chat.OutcomeCompleted, InputHash: "h"}) {
			t.Errorf("release window %+v", w)
		}
	})
}
