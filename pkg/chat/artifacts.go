package chat

import (
	"fmt"
	"strings"
)

// ValidateArtifacts checks references against DESIGN §6: artifactType is
// one of the five ArtifactType values; entryPath is a non-empty relative
// path inside the workspace with no leading "/", no ".." segment, no
// backslash and no NUL, and valid UTF-8. It returns an error wrapping
// ErrInvalidArtifact that names the index of the first bad reference (never
// its content).
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
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "'..' segment in entryPath"
		}
	}
	return ""
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
