package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/turn"
)

// attachServers serves the turn and artifacts handlers over one store,
// with attachments in an s3attach.Local served at /uploads/, as the dev
// server mounts them.
func attachServers(t *testing.T) (turnURL, artifactsURL string) {
	t.Helper()
	store := memory.New(memory.Options{})
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthDev},
		auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	local := s3attach.NewLocal(srv.URL+"/uploads", nil)
	mux.Handle("/uploads/", http.StripPrefix("/uploads", local.Handler()))
	th, err := turn.NewHandler(turn.Options{
		Config:        turn.Config{Store: store, Model: echo.New(0, 64), Definition: turn.Definition{ID: "default", Revision: 1}, Attachments: local},
		Authenticator: authn,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/turn/", http.StripPrefix("/turn", th))
	ah, err := sessionapi.NewArtifactsHandler(sessionapi.Options{Store: store, Authenticator: authn, Attachments: local})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/artifacts/", http.StripPrefix("/artifacts", ah))
	return srv.URL + "/turn/", srv.URL + "/artifacts/"
}

// TestChatAttach: -attach uploads each file in the two phases and sends
// it with the first turn; the echo model describes what it received.
// Files it cannot send are refused before anything is sent.
func TestChatAttach(t *testing.T) {
	turnURL, artifactsURL := attachServers(t)
	dir := t.TempDir()
	png := filepath.Join(dir, "cat.png")
	pngData := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 100)...)
	notes := filepath.Join(dir, "notes.md")
	for path, data := range map[string][]byte{png: pngData, notes: []byte("# notes\n")} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-artifacts", artifactsURL, "-session", "s1", "-token", "dev.alice",
		"-attach", png, "-attach", notes, "what are these?"}, "")
	if code != 0 {
		t.Fatalf("chat exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"attached cat.png (image/png, 108 bytes)", "attached notes.md (text/markdown, 8 bytes)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	for _, want := range []string{"Echo: what are these?", "Attached: cat.png (image/png, 108 bytes)", "Attached: notes.md (text/markdown, 8 bytes)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}

	bad := filepath.Join(dir, "drawing.svg")
	empty := filepath.Join(dir, "empty.txt")
	big := filepath.Join(dir, "big.png")
	for path, data := range map[string][]byte{bad: []byte("<svg/>"), empty: nil, big: make([]byte, 4<<20)} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, file := range map[string]string{"another type": bad, "empty": empty, "too large": big,
		"missing": filepath.Join(dir, "nope.png"), "a directory": dir} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runTurnctl([]string{"chat", "-url", turnURL, "-artifacts", artifactsURL, "-session", "s2", "-token", "dev.alice",
				"-attach", file, "hi"}, "")
			if code != 2 || out != "" || !strings.Contains(errOut, "turnctl chat: -attach ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and the refusal", code, out, errOut)
			}
		})
	}

	// The storage refuses what the server would (no artifacts route
	// here): the declaration's error is shown and the turn not sent.
	code, out, errOut = runTurnctl([]string{"chat", "-url", turnURL, "-artifacts", turnURL, "-session", "s3", "-token", "dev.alice",
		"-attach", png, "hi"}, "")
	if code != 1 || strings.Contains(out, "Echo") || !strings.Contains(errOut, "turnctl chat: ") {
		t.Errorf("upload to a route that has none: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
