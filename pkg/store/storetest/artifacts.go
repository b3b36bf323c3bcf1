package storetest

import (
	"slices"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
)

// artifactCases prove PutArtifacts and GetArtifacts
// (docs/design.md#history-and-artifacts-api).
func artifactCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"ReplaceDedupeLastWins": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			in := []chat.ArtifactReference{
				{EntryPath: "report.md", ArtifactType: chat.ArtifactDocument},
				{EntryPath: "img/chart.png", ArtifactType: chat.ArtifactImage},
				{EntryPath: "report.md", ArtifactType: chat.ArtifactWebpage},
				{EntryPath: "Report.md", ArtifactType: chat.ArtifactDocument},   // case matters
				{EntryPath: "a/report.md", ArtifactType: chat.ArtifactDocument}, // full path matters
				{EntryPath: "docs/./Ünïcode 📄 deck.pptx", ArtifactType: chat.ArtifactPresentation},
			}
			want := []chat.ArtifactReference{
				{EntryPath: "report.md", ArtifactType: chat.ArtifactWebpage},
				{EntryPath: "img/chart.png", ArtifactType: chat.ArtifactImage},
				{EntryPath: "Report.md", ArtifactType: chat.ArtifactDocument},
				{EntryPath: "a/report.md", ArtifactType: chat.ArtifactDocument},
				{EntryPath: "docs/./Ünïcode 📄 deck.pptx", ArtifactType: chat.ArtifactPresentation},
			}
			e.putArtifacts("s1", "t1", host, in, want)
			e.wantArtifacts("s1", "t1", want)

			next := []chat.ArtifactReference{{EntryPath: "sheet.xlsx", ArtifactType: chat.ArtifactSpreadsheet}}
			e.putArtifacts("s1", "t1", alice, next, next)
			e.wantArtifacts("s1", "t1", next)
			if got := e.find("s1", "t1").Artifacts; !slices.Equal(got, next) {
				t.Errorf("FindTurn artifacts = %+v, want %+v", got, next)
			}
		},

		"EmptyClears": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			some := []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}
			for name, clear := range map[string][]chat.ArtifactReference{"empty": {}, "nil": nil} {
				e.putArtifacts("s1", "t1", host, some, some)
				e.putArtifacts("s1", "t1", host, clear, nil)
				e.wantArtifacts("s1", "t1", nil)
				if got := e.find("s1", "t1").Artifacts; len(got) != 0 {
					t.Errorf("%s: FindTurn artifacts = %+v, want none", name, got)
				}
			}
		},

		"SamePathOtherTurnIndependent": func(t *testing.T, e *env) {
			e.completeTurns("s1", "t", 2)
			a := []chat.ArtifactReference{{EntryPath: "out.md", ArtifactType: chat.ArtifactDocument}}
			b := []chat.ArtifactReference{{EntryPath: "out.md", ArtifactType: chat.ArtifactWebpage}}
			e.putArtifacts("s1", "t000", host, a, a)
			e.putArtifacts("s1", "t001", host, b, b)
			e.wantArtifacts("s1", "t000", a)
			e.putArtifacts("s1", "t001", host, nil, nil)
			e.wantArtifacts("s1", "t000", a)
		},

		"SamePathOtherSessionIndependent": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			e.completeTurn("s2", "t1")
			a := []chat.ArtifactReference{{EntryPath: "out.md", ArtifactType: chat.ArtifactDocument}}
			b := []chat.ArtifactReference{{EntryPath: "out.md", ArtifactType: chat.ArtifactImage}}
			e.putArtifacts("s1", "t1", host, a, a)
			e.putArtifacts("s2", "t1", host, b, b)
			e.wantArtifacts("s1", "t1", a)
			e.putArtifacts("s2", "t1", host, nil, nil)
			e.wantArtifacts("s1", "t1", a)
		},

		"InvalidRejectedNothingStored": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			kept := []chat.ArtifactReference{{EntryPath: "kept.md", ArtifactType: chat.ArtifactDocument}}
			e.putArtifacts("s1", "t1", host, kept, kept)
			cases := map[string]chat.ArtifactReference{
				"unknown type":   {EntryPath: "a.md", ArtifactType: "video"},
				"empty type":     {EntryPath: "a.md"},
				"absolute path":  {EntryPath: "/etc/passwd", ArtifactType: chat.ArtifactDocument},
				"dotdot segment": {EntryPath: "a/../../b.md", ArtifactType: chat.ArtifactDocument},
				"dotdot alone":   {EntryPath: "..", ArtifactType: chat.ArtifactDocument},
				"backslash":      {EntryPath: `a\b.md`, ArtifactType: chat.ArtifactDocument},
				"NUL":            {EntryPath: "a\x00b.md", ArtifactType: chat.ArtifactDocument},
				"empty path":     {EntryPath: "", ArtifactType: chat.ArtifactDocument},
				"invalid UTF-8":  {EntryPath: "a\xffb.md", ArtifactType: chat.ArtifactDocument},
			}
			for name, bad := range cases {
				t.Run(name, func(t *testing.T) {
					e := e.with(t)
					refs := []chat.ArtifactReference{{EntryPath: "new.md", ArtifactType: chat.ArtifactDocument}, bad}
					for _, p := range []chat.Principal{host, alice} {
						_, err := e.store.PutArtifacts(e.ctx, "s1", "t1", p, refs)
						wantErr(t, "PutArtifacts", err, chat.ErrInvalidArtifact)
					}
					e.wantArtifacts("s1", "t1", kept)
				})
			}
		},

		"TurnNotFound": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			e.completeTurn("s2", "other")
			e.claim("s1", "unsaved")
			refs := []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}
			for name, turnID := range map[string]string{"turn of another session": "other", "unsaved turn": "unsaved", "unknown turn": "nope"} {
				t.Run(name, func(t *testing.T) {
					for _, p := range []chat.Principal{host, alice} {
						_, err := e.store.PutArtifacts(e.ctx, "s1", turnID, p, refs)
						wantErr(t, "PutArtifacts", err, chat.ErrTurnNotFound)
					}
					_, err := e.store.GetArtifacts(e.ctx, "s1", turnID, alice)
					wantErr(t, "GetArtifacts", err, chat.ErrTurnNotFound)
				})
			}
			_, err := e.store.PutArtifacts(e.ctx, "missing", "t1", host, refs)
			wantErr(t, "trusted PutArtifacts on a missing session", err, chat.ErrSessionNotFound)
			e.wantArtifacts("s2", "other", nil)
		},

		"TrustedHostMayWrite": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			refs := []chat.ArtifactReference{{EntryPath: "site/index.html", ArtifactType: chat.ArtifactWebpage}}
			e.putArtifacts("s1", "t1", host, refs, refs)
			e.wantArtifacts("s1", "t1", refs)
			// An untrusted principal of the host's subject is just a stranger.
			untrusted := host
			untrusted.Trusted = false
			_, err := e.store.PutArtifacts(e.ctx, "s1", "t1", untrusted, nil)
			wantErr(t, "untrusted stranger", err, chat.ErrSessionNotFound)
			e.wantArtifacts("s1", "t1", refs)
		},
	}
}

// putArtifacts writes refs to turnID as p and fails the test on an error
// or a result other than want (nil and empty are equal).
func (e *env) putArtifacts(sessionID, turnID string, p chat.Principal, refs, want []chat.ArtifactReference) {
	e.t.Helper()
	got, err := e.store.PutArtifacts(e.ctx, sessionID, turnID, p, refs)
	if err != nil {
		e.t.Fatalf("PutArtifacts(%s, %s): %v", sessionID, turnID, err)
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("PutArtifacts(%s, %s) = %+v, want %+v", sessionID, turnID, got, want)
	}
}

// wantArtifacts fails the test unless alice reads want from turnID (nil
// and empty are equal).
func (e *env) wantArtifacts(sessionID, turnID string, want []chat.ArtifactReference) {
	e.t.Helper()
	got, err := e.store.GetArtifacts(e.ctx, sessionID, turnID, alice)
	if err != nil {
		e.t.Fatalf("GetArtifacts(%s, %s): %v", sessionID, turnID, err)
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("GetArtifacts(%s, %s) = %+v, want %+v", sessionID, turnID, got, want)
	}
}
