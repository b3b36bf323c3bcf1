package chat

import (
	"fmt"
	"strings"
	"unicode"
)

// ValidateArtifacts checks references against docs/design.md#history-and-artifacts-api: artifactType is
// one of the five ArtifactType values; entryPath is 1..1024 bytes of valid
// UTF-8, a relative path inside the workspace with no leading "/", no ".."
// segment, no backslash, and no character that can change how the path
// reads when it is printed (see IsUnsafePathRune: control characters,
// format characters and other invisible ones, line and paragraph
// separators). It
// returns an error wrapping ErrInvalidArtifact that names the index of the
// first bad reference and a fixed reason (never its content).
func ValidateArtifacts(refs []ArtifactReference) error {
	for i, r := range refs {
		if reason := artifactProblem(r); reason != "" {
			return fmt.Errorf("%w: artifacts[%d]: %s", ErrInvalidArtifact, i, reason)
		}
	}
	return nil
}

func artifactProblem(r ArtifactReference) string {
	switch r.ArtifactType {
	case ArtifactDocument, ArtifactWebpage, ArtifactPresentation, ArtifactSpreadsheet, ArtifactImage:
	default:
		return "unknown artifactType"
	}
	p := r.EntryPath
	switch {
	case p == "":
		return "empty entryPath"
	case len(p) > 1024:
		return "entryPath longer than 1024 bytes"
	case !validUTF8(p):
		return "entryPath is not valid UTF-8"
	case strings.HasPrefix(p, "/"):
		return "absolute entryPath"
	case strings.ContainsRune(p, '\\'):
		return "backslash in entryPath"
	case strings.ContainsRune(p, 0):
		return "NUL in entryPath"
	case strings.ContainsFunc(p, unicode.IsControl):
		return "control character in entryPath"
	case strings.ContainsFunc(p, IsUnsafePathRune):
		return "invisible, format or line separator character in entryPath"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "'..' segment in entryPath"
		}
	}
	return ""
}

// IsUnsafePathRune reports whether r may not appear in an artifact
// reference's entryPath: stored paths are shown in terminals, logs and
// user interfaces, where these characters reorder, hide or split the text
// around them, or make two different paths look the same. The set is
//
//   - the C0 controls U+0000-U+001F (newline, tab and ESC among them), DEL
//     U+007F and the C1 controls U+0080-U+009F (U+0085 NEXT LINE among them):
//     Unicode category Cc, unicode.IsControl;
//   - every format character, Unicode category Cf (unicode.Cf): the
//     bidirectional embeddings, overrides, isolates and marks (U+202A-U+202E,
//     U+2066-U+2069, U+200E, U+200F, U+061C), the zero-width space, joiners
//     and word joiner (U+200B-U+200D, U+2060), U+FEFF, the soft hyphen
//     U+00AD, the interlinear annotation characters U+FFF9-U+FFFB and the
//     tag characters among them. Most draw nothing, so "a" U+200D "b" and
//     "ab" look the same; a file name has no need of them (emoji joined
//     into one picture by U+200D are refused with the rest);
//   - the other default-ignorable code points
//     (unicode.Other_Default_Ignorable_Code_Point), which draw nothing
//     either: the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, U+034F
//     COMBINING GRAPHEME JOINER, and unassigned code points kept invisible
//     for the future;
//   - the whole tag block U+E0000-U+E007F, assigned or not (the two lists
//     above cover it today; the range is named so it stays refused);
//   - U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR, which some
//     viewers and JavaScript source treat as line breaks.
//
// Variation selectors (U+FE0F after an emoji, for instance), right-to-left
// letters and no-break spaces are allowed. The sets are those of the
// unicode package's Unicode version (unicode.Version).
func IsUnsafePathRune(r rune) bool {
	switch {
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return true
	case r >= 0xE0000 && r <= 0xE007F, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// DedupeArtifacts returns refs deduplicated by full EntryPath, the last
// reference for a repeated path winning and keeping the position of that
// path's first occurrence. It never returns nil (an empty collection is []).
func DedupeArtifacts(refs []ArtifactReference) []ArtifactReference {
	out := make([]ArtifactReference, 0, len(refs))
	index := make(map[string]int, len(refs))
	for _, r := range refs {
		if i, ok := index[r.EntryPath]; ok {
			out[i] = r
			continue
		}
		index[r.EntryPath] = len(out)
		out = append(out, r)
	}
	return out
}

// StoredArtifacts returns refs as a store records them: validated
// (ValidateArtifacts: ErrInvalidArtifact, nothing to store) and
// deduplicated (DedupeArtifacts) into a fresh, non-nil slice.
func StoredArtifacts(refs []ArtifactReference) ([]ArtifactReference, error) {
	if err := ValidateArtifacts(refs); err != nil {
		return nil, err
	}
	return DedupeArtifacts(refs), nil
}
