package devserver

import (
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/turnstream/turnstream/pkg/httpedge"
)

// canonicalPaths answers a request whose path is not canonical
// (canonicalPath) with the protocol's JSON 404 REQUEST_NOT_FOUND, logged
// as mount "unclean", and passes every other request to h. Without it the
// ServeMux behind would answer "//", "/turn//stop" or
// "/turn/../history/sessions/s" with a 307 redirect to the cleaned path
// and an HTML body, which no client of the protocol expects and which
// would send a request meant for one function to another. A function URL
// has no such redirect either: the path reaches the function as sent.
func canonicalPaths(h http.Handler, log *slog.Logger) http.Handler {
	notFound := logged("unclean", http.HandlerFunc(httpedge.NotFound), log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.URL.Path) {
			notFound.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// canonicalPath reports whether p, a request's decoded path, is absolute
// and unchanged by path.Clean but for one trailing slash: no empty
// segment ("//"), no "." or ".." segment, escaped ones ("%2e%2e")
// included, since p is decoded.
func canonicalPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	c := path.Clean(p)
	return c == p || c != "/" && c+"/" == p
}
