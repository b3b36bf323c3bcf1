package chat

import (
	"fmt"
	"strings"
	"unicode"
)

// ValidateArtifacts checks references against docs/design.md §6: artifactType is
// one of the five ArtifactType values; entryPath is 1..1024 bytes of valid
// UTF-8, a relative path inside the workspace with no leading "/", no ".."
// segment, no backslash, and no character that can change how the path
// reads when it is printed (see IsUnsafePathRune: control characters,
// bidirectional formatting characters, line and paragraph separators). It
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
		return "bidirectional formatting or line separator character in entryPath"
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
// around them. The set is
//
//   - the C0 controls U+0000-U+001F (newline, tab and ESC among them), DEL
//     U+007F and the C1 controls U+0080-U+009F (U+0085 NEXT LINE among them):
//     Unicode category Cc, unicode.IsControl;
//   - the bidirectional formatting characters: embeddings and overrides
//     U+202A-U+202E, isolates U+2066-U+2069, and the implicit marks U+200E
//     LEFT-TO-RIGHT MARK, U+200F RIGHT-TO-LEFT MARK and U+061C ARABIC
//     LETTER MARK (marks are invisible and can make a path display as
//     another one; a file name has no need of them);
//   - U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR, which some
//     viewers and JavaScript source treat as line breaks.
//
// Other format characters (zero-width joiners in emoji sequences, for
// instance) are allowed.
func IsUnsafePathRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	switch r {
	case 0x200E, 0x200F, 0x061C, 0x2028, 0x2029:
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
