package devserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestMountPaths(t *testing.T) {
	tests := map[string]struct{ target, wantPath, wantRaw string }{
		"root with slash":    {"/turn/", "/", ""},
		"root without slash": {"/turn", "/", ""},
		"route":              {"/turn/stop", "/stop", ""},
		"nested":             {"/turn/a/b", "/a/b", ""},
		// An escaped slash keeps its raw form, stripped of the mount too.
		"escaped": {"/turn/sessions/a%2Fb", "/sessions/a/b", "/sessions/a%2Fb"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var path, raw, uri string
			mux := http.NewServeMux()
			mount(mux, TurnMount, "turn", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path, raw, uri = r.URL.Path, r.URL.RawPath, r.RequestURI
			}), slog.New(slog.DiscardHandler))
			mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "http://dev"+tc.target, nil))
			if path != tc.wantPath || raw != tc.wantRaw {
				t.Fatalf("handler saw path %q raw %q, want %q raw %q", path, raw, tc.wantPath, tc.wantRaw)
			}
			want := tc.wantRaw
			if want == "" {
				want = tc.wantPath
			}
			if uri != want {
				t.Errorf("RequestURI %q, want %q", uri, want)
			}
		})
	}
}
