package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/turn"
)

// ---- the dev-server wiring ------------------------------------------------

// Header a turnbench client sends so the server can file the request's
// DynamoDB trace under it (bench-only; the handlers never see it used).
const benchIDHeader = "X-Turnbench-Id"

// benchFaultHeader carries the aim of a load submission (aim.String).
const benchFaultHeader = "X-Turnbench-Fault"

// wiring is the dev server's handler (internal/devserver: /turn/,
// /history/, /artifacts/ with the prefix stripped) served over real
// loopback HTTP, on one DynamoDB store whose client carries the tap.
type wiring struct {
	srv      *http.Server
	base     string // http://127.0.0.1:port
	traces   sync.Map
	inflight atomic.Int64
	idle     chan struct{} // signalled when inflight drops to 0
}

// handlerConfig is what differs between the wirings the first sections
// start: the echo model's pace and the lease.
type handlerConfig struct {
	EchoDelay     time.Duration
	EchoChunk     int
	LeaseDuration time.Duration // zero: the configuration's
}

// newWiring starts a loopback server of the dev server's handler on
// store, with the echo pace and lease of hc.
func newWiring(store chat.Store, hc handlerConfig) (*wiring, error) {
	return newTurnWiring(store, func(o *turn.Options) {
		o.Model = echo.New(hc.EchoDelay, hc.EchoChunk)
		if hc.LeaseDuration != 0 {
			o.LeaseDuration = hc.LeaseDuration
		}
	})
}

// benchEnv is the environment the wirings' configuration is read from
// (pkg/config): dev auth, one definition without tools, checkpoints off
// (a section that wants them sets them), the echo model at full speed.
var benchEnv = map[string]string{
	"AUTH_MODE":           "dev",
	"DEFINITION_ID":       "assistant",
	"CHECKPOINT_INTERVAL": "0",
	"ECHO_DELAY":          "0",
	"LOG_LEVEL":           "error",
}

// newTurnWiring starts a loopback server of the dev server's handler
// (internal/devserver, as cmd/devserver serves it) on store, with the
// turn handler's options as set leaves them (echo pace, checkpoints,
// pacing, lease). A model set leaves in Options.Model serves the
// configured definition (the dev server's echo provider).
func newTurnWiring(store chat.Store, set func(*turn.Options)) (*wiring, error) {
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := benchEnv[k]; return v, ok })
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	authn, err := auth.New(context.Background(), cfg.Auth, auth.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	h, err := devserver.NewHandler(devserver.Options{
		Config: cfg, Store: store, Authenticator: authn,
		Turn: func(o *turn.Options) {
			set(o)
			if o.Model != nil {
				o.Models = map[string]model.Model{config.ProviderEcho: o.Model}
				o.Model = nil
			}
		},
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	w := &wiring{idle: make(chan struct{}, 1), base: "http://" + ln.Addr().String()}
	w.srv = &http.Server{Handler: w.traced(h), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }() // ends with Close
	return w, nil
}

// traced gives each request a trace (filed under its benchIDHeader) and
// counts requests in flight.
func (w *wiring) traced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.inflight.Add(1)
		defer func() {
			if w.inflight.Add(-1) == 0 {
				select {
				case w.idle <- struct{}{}:
				default:
				}
			}
		}()
		tr := &trace{aim: parseAim(r.Header.Get(benchFaultHeader))}
		if id := r.Header.Get(benchIDHeader); id != "" {
			w.traces.Store(id, tr)
		}
		h.ServeHTTP(rw, r.WithContext(withTrace(r.Context(), tr)))
	})
}

// trace returns the trace of the request sent with id, or nil.
func (w *wiring) trace(id string) *trace {
	v, ok := w.traces.Load(id)
	if !ok {
		return nil
	}
	return v.(*trace)
}

// waitIdle waits until no request is being served (handlers keep running
// after a client disconnect) or timeout passes.
func (w *wiring) waitIdle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for w.inflight.Load() != 0 {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-w.idle:
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

func (w *wiring) close() { _ = w.srv.Close() }
