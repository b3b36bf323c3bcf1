package benchwire

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/internal/loadcheck"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Wiring is the dev server's handler (internal/devserver: /turn/,
// /history/, /artifacts/ with the prefix stripped) served over real
// loopback HTTP, on one DynamoDB store whose client carries the tap.
type Wiring struct {
	srv    *http.Server
	base   string // http://127.0.0.1:port
	traces *loadcheck.Traces
	// bodies counts the request body bytes each mount received
	// (BodyBytes); uploads is the attachment store of NewTurnUploads.
	bodies  sync.Map // mount ("turn", "uploads", ...) -> *atomic.Int64
	uploads *s3attach.Local
}

// HandlerConfig is what differs between the wirings the first sections
// start: the echo model's pace, the lease, and the usage ledger.
type HandlerConfig struct {
	EchoDelay     time.Duration
	EchoChunk     int
	LeaseDuration time.Duration // zero: the configuration's
	// Ledger turns the usage ledger on (USAGE_LEDGER=on: every turn
	// counted, GET /history/usage served); the store's ledger should be
	// enabled too, so that the turns it decides are counted.
	Ledger bool
}

// New starts a loopback server of the dev server's handler on
// store, with the echo pace, lease and ledger of hc.
func New(store chat.Store, hc HandlerConfig) (*Wiring, error) {
	var env map[string]string
	if hc.Ledger {
		env = map[string]string{"USAGE_LEDGER": "on"}
	}
	return NewTurnEnv(store, nil, env, func(o *turn.Options) {
		o.Model = echo.New(hc.EchoDelay, hc.EchoChunk)
		if hc.LeaseDuration != 0 {
			o.LeaseDuration = hc.LeaseDuration
		}
	})
}

// benchEnv is the environment the wirings' configuration is read from
// (pkg/config): dev auth, one definition without tools, checkpoints off
// (a section that wants them sets them), the echo model at full speed,
// the usage ledger off (the turn's own requests; the ledger section and
// the load run turn it on).
var benchEnv = map[string]string{
	"AUTH_MODE":           "dev",
	"DEFINITION_ID":       "assistant",
	"CHECKPOINT_INTERVAL": "0",
	"ECHO_DELAY":          "0",
	"LOG_LEVEL":           "error",
	"USAGE_LEDGER":        "off",
}

// NewTurn starts a loopback server of the dev server's handler
// (internal/devserver, as cmd/devserver serves it) on store, with the
// turn handler's options as set leaves them (echo pace, checkpoints,
// pacing, lease). A model set leaves in Options.Model serves the
// configured definition (the dev server's echo provider).
func NewTurn(store chat.Store, set func(*turn.Options)) (*Wiring, error) {
	return NewTurnEnv(store, nil, nil, set)
}

// NewTurnTelemetry is NewTurn with the handlers' telemetry (nil: none):
// what turnbench's telemetry section compares.
func NewTurnTelemetry(store chat.Store, tel *telemetrysetup.Set, set func(*turn.Options)) (*Wiring, error) {
	return NewTurnEnv(store, tel, nil, set)
}

// NewTurnEnv is NewTurn with the handlers' telemetry (nil: none) and
// env's variables over benchEnv (e.g. USAGE_LEDGER, QUOTAS, QUOTA_CACHE).
func NewTurnEnv(store chat.Store, tel *telemetrysetup.Set, env map[string]string, set func(*turn.Options)) (*Wiring, error) {
	return newWiring(store, tel, env, set, false)
}

// NewTurnUploads is NewTurn with the dev server's attachment store (an
// s3attach.Local served under devserver.UploadsMount, as `make dev`
// runs it): what turnbench's attachments section measures.
func NewTurnUploads(store chat.Store, set func(*turn.Options)) (*Wiring, error) {
	return newWiring(store, nil, nil, set, true)
}

// Uploads is the attachment store of a wiring of NewTurnUploads.
func (w *Wiring) Uploads() *s3attach.Local { return w.uploads }

// BodyBytes returns the request body bytes the mount ("turn", "history",
// "artifacts", "uploads") received since the wiring started.
func (w *Wiring) BodyBytes(mount string) int64 {
	if n, ok := w.bodies.Load(mount); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// countBodies wraps h so that each request's body bytes are counted
// under its first path segment (BodyBytes).
func (w *Wiring) countBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mount, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		n, _ := w.bodies.LoadOrStore(mount, new(atomic.Int64))
		if r.Body != nil {
			r.Body = &countingBody{ReadCloser: r.Body, n: n.(*atomic.Int64)}
		}
		h.ServeHTTP(rw, r)
	})
}

// countingBody counts the bytes read through it.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

func newWiring(store chat.Store, tel *telemetrysetup.Set, env map[string]string, set func(*turn.Options), uploads bool) (*Wiring, error) {
	cfg, err := config.FromLookup(func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		v, ok := benchEnv[k]
		return v, ok
	})
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	authn, err := auth.New(context.Background(), cfg.Auth, auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	w := &Wiring{base: "http://" + ln.Addr().String(), traces: loadcheck.NewTraces()}
	if uploads {
		w.uploads = s3attach.NewLocal(w.base+strings.TrimSuffix(devserver.UploadsMount, "/"), nil)
	}
	h, err := devserver.NewHandler(devserver.Options{
		Config: cfg, Store: store, Authenticator: authn, Telemetry: tel, Uploads: w.uploads,
		Turn: func(o *turn.Options) {
			set(o)
			if o.Model != nil {
				o.Models = map[string]model.Model{config.ProviderEcho: o.Model}
				o.Model = nil
			}
		},
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	w.srv = &http.Server{Handler: w.traces.Wrap(w.countBodies(h)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }() // ends with Close
	return w, nil
}

// Trace returns the trace of the request sent with loadcheck.IDHeader
// id, or nil.
func (w *Wiring) Trace(id string) *loadcheck.Trace { return w.traces.Trace(id) }

// WaitIdle waits until no request is being served (handlers keep running
// after a client disconnect) or timeout passes.
func (w *Wiring) WaitIdle(timeout time.Duration) bool { return w.traces.WaitIdle(timeout) }

// Traces are the traces of the wiring's requests.
func (w *Wiring) Traces() *loadcheck.Traces { return w.traces }

// TurnURL is the turn function's base URL (ends with "/").
func (w *Wiring) TurnURL() string { return w.base + "/turn/" }

// Close stops the server.
func (w *Wiring) Close() { _ = w.srv.Close() }
