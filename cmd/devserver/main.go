// Command devserver runs turnstream's three functions on one local port
// with real chunked streaming (docs/design.md §10):
//
//	go run ./cmd/devserver [-addr 127.0.0.1:8787] [-read-timeout 30s]
//
// It mounts the turn handler under /turn/ (POST /turn/ submits a turn,
// POST /turn/stop stops one, GET /turn/capabilities), the history handler
// under /history/ and the artifacts handler under /artifacts/, each with
// its prefix stripped, so every handler sees "/" exactly as behind its own
// function URL. A mount path without its trailing slash ("/turn") is
// served as "/" too, so that POST /turn is not turned into a GET by a
// redirect.
//
// Configuration is pkg/config's environment (docs/design.md §9) plus ADDR (or
// -addr, which wins). AUTH_MODE defaults to dev: "Authorization: Bearer
// dev.<subject>" names the principal, no header means subject "local", and
// subject "host" may write artifact references. Dev auth listens on
// loopback addresses only. The store is in memory unless DYNAMODB_ENDPOINT
// names a DynamoDB API server (DynamoDB Local, dynalite), where the table
// TABLE_NAME is created when absent, also when it vanishes while the
// server runs (see newStore). The model is the offline echo model;
// definitions come from pkg/config as in the turn function
// (definition.Load), and the demo tool workspace_note is registered
// and, unless MODEL_TOOLS or DEFINITIONS_FILE is set, offered by the
// default definition, so that "/note <title>: <body>" makes the echo
// model call it (pkg/model/echo): the turn's snapshots show the tool call
// (complete; the instant demo tool's running state is coalesced away,
// docs/design.md §3) and the turn records the note's artifact reference. The demo
// tool workspace_note_delete is offered too and requires approval:
// "/delete <title>" ends the turn with the call waiting
// (requires_confirmation) until a decision turn approves or denies it
// (docs/approvals.md).
//
// The root "/" serves the demo chat page (internal/demo), built from
// clients/js and embedded in the binary.
//
// It prints the three base URLs at start, logs one JSON line per request
// (method, mount, status, bytes, duration; never a path, query or body
// byte) and shuts down gracefully on SIGINT or SIGTERM, letting running
// turns finish for up to ShutdownGrace.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/turnstream/turnstream/internal/demo"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// DefaultAddr is where the dev server listens unless -addr or ADDR says
// otherwise (docs/design.md §10).
const DefaultAddr = "127.0.0.1:8787"

// ShutdownGrace bounds how long a shutdown waits for running requests
// (streaming turns included) before closing their connections.
const ShutdownGrace = 10 * time.Second

// Connection timeouts of the local server (Lambda delivers a request's body
// whole, so only the dev server needs them). DefaultReadTimeout bounds
// reading one request, header and body (-read-timeout): a client that
// trickles its body is answered with an error and disconnected once it
// passes. The header must arrive within headerTimeout (or the read
// timeout, when shorter); an idle keep-alive connection is closed after
// IdleTimeout.
//
// There is deliberately no http.Server WriteTimeout: it would bound the
// whole response, and a turn streams for up to TURN_TIMEOUT. The turn
// handler sets its own per-request write deadline (its deadline plus
// CLEANUP_RESERVE, through http.ResponseController), so a client that
// stops reading cannot hold a stream past it. Reading stays unbounded once
// the body is read: net/http clears the read deadline when it starts
// watching for the client to go away, so ReadTimeout never cuts a long
// stream (TestTimeouts proves both).
const (
	DefaultReadTimeout = 30 * time.Second
	IdleTimeout        = 2 * time.Minute
	headerTimeout      = 10 * time.Second
)

// setupTimeout bounds start-up work: the DynamoDB table check and creation.
const setupTimeout = time.Minute

// Mount points of the three handlers (docs/design.md §10).
const (
	turnMount      = "/turn/"
	historyMount   = "/history/"
	artifactsMount = "/artifacts/"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		_, _ = fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
}

// run parses args and the environment (lookupEnv), starts the server and
// serves until ctx ends, then shuts down gracefully. The start banner and
// the request log go to stdout. It returns an error for a bad flag or
// configuration, a listen failure or a failed store set-up; nil after a
// clean shutdown.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	fs := flag.NewFlagSet("devserver", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addrDefault := DefaultAddr
	if v, ok := lookupEnv("ADDR"); ok && v != "" {
		addrDefault = v
	}
	addr := fs.String("addr", addrDefault, "listen address (host:port); env ADDR")
	readTimeout := fs.Duration("read-timeout", DefaultReadTimeout, "bound on reading one request, header and body")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *readTimeout <= 0 {
		return fmt.Errorf("-read-timeout %s: want a positive duration", *readTimeout)
	}

	cfg, err := config.FromLookup(lookupEnv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if cfg.Model.Provider != config.ProviderEcho {
		return fmt.Errorf("MODEL_PROVIDER: the dev server runs the echo model only")
	}
	if _, set := lookupEnv("MODEL_TOOLS"); !set && cfg.Model.DefinitionsFile == "" {
		cfg.Model.Tools = []string{tool.WorkspaceNoteName, tool.WorkspaceNoteDeleteName}
		cfg.Model.ApprovalTools = []string{tool.WorkspaceNoteDeleteName}
	}
	if cfg.Auth.Mode == config.AuthDev && !loopback(*addr) {
		return fmt.Errorf("-addr %s: AUTH_MODE dev lets any caller name any principal; listen on a loopback address", *addr)
	}

	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// The handlers log below the request line: warnings and errors only,
	// everything when LOG_LEVEL is debug.
	handlerLog := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: max(cfg.LogLevel, slog.LevelWarn)}))
	if cfg.LogLevel <= slog.LevelDebug {
		handlerLog = log
	}

	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	_, haveKeys := lookupEnv("AWS_ACCESS_KEY_ID")
	store, storeDesc, err := newStore(setupCtx, cfg, !haveKeys, log)
	if err != nil {
		return err
	}
	authn, err := auth.New(setupCtx, cfg.Auth, auth.WithLookupEnv(lookupEnv))
	if err != nil {
		return fmt.Errorf("authenticator: %w", err)
	}
	cancel()

	h, err := newHandler(cfg, store, authn, handlerLog, log)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	_, _ = fmt.Fprintf(stdout, "turnstream dev server (auth %s, %s, echo model)\n", cfg.Auth.Mode, storeDesc)
	_, _ = fmt.Fprintf(stdout, "  turn:      %s%s\n", base, turnMount)
	_, _ = fmt.Fprintf(stdout, "  history:   %s%s\n", base, historyMount)
	_, _ = fmt.Fprintf(stdout, "  artifacts: %s%s\n", base, artifactsMount)
	_, _ = fmt.Fprintf(stdout, "  chat page: %s/\n", base)

	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(headerTimeout, *readTimeout),
		ReadTimeout:       *readTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	_, _ = fmt.Fprintln(stdout, "shutting down")
	// ctx has ended: the shutdown gets its own bounded context.
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancelShutdown()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// newHandler mounts the three handlers of docs/design.md §10 behind the request log.
func newHandler(cfg config.Config, store chat.Store, authn auth.Authenticator, handlerLog, requestLog *slog.Logger) (http.Handler, error) {
	reg := tool.NewRegistry(nil)
	for _, t := range []tool.Tool{tool.WorkspaceNote(), tool.WorkspaceNoteDelete()} {
		if err := reg.Register(t); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	defs, err := definition.Load(cfg.Model.Definitions(), os.ReadFile, reg.Has)
	if err != nil {
		return nil, fmt.Errorf("definitions: %w", err)
	}
	turnHandler, err := turn.NewHandler(turn.Options{
		Store:                  store,
		Authenticator:          authn,
		Definitions:            defs,
		Models:                 map[string]model.Model{config.ProviderEcho: echo.New(cfg.Model.EchoDelay, cfg.Model.EchoChunk)},
		Tools:                  reg,
		TurnTimeout:            cfg.TurnTimeout,
		CleanupReserve:         cfg.CleanupReserve,
		LeaseDuration:          cfg.LeaseDuration,
		SnapshotInterval:       cfg.SnapshotInterval,
		SnapshotBytesPerSecond: cfg.SnapshotBytesPerSecond,
		MaxSnapshotGap:         cfg.SnapshotMaxGap,
		CheckpointInterval:     cfg.CheckpointInterval,
		ResumePollInterval:     cfg.ResumePollInterval,
		MaxBodyBytes:           cfg.MaxBodyBytes,
		ConfirmationTTL:        cfg.ConfirmationTTL,
		Logger:                 handlerLog,
	})
	if err != nil {
		return nil, fmt.Errorf("turn handler: %w", err)
	}
	sessionOpts := sessionapi.Options{
		Store:         store,
		Authenticator: authn,
		Logger:        handlerLog,
		MaxBodyBytes:  cfg.MaxBodyBytes,
	}
	historyHandler, err := sessionapi.NewHistoryHandler(sessionOpts)
	if err != nil {
		return nil, fmt.Errorf("history handler: %w", err)
	}
	artifactsHandler, err := sessionapi.NewArtifactsHandler(sessionOpts)
	if err != nil {
		return nil, fmt.Errorf("artifacts handler: %w", err)
	}
	mux := http.NewServeMux()
	mount(mux, turnMount, "turn", turnHandler, requestLog)
	mount(mux, historyMount, "history", historyHandler, requestLog)
	mount(mux, artifactsMount, "artifacts", artifactsHandler, requestLog)
	mux.Handle("/", logged("demo", demo.Handler(http.HandlerFunc(notFound)), requestLog))
	return mux, nil
}

// mount serves h under prefix (ending in "/") and under prefix without its
// slash, stripping it so that h sees "/..." as behind its function URL.
func mount(mux *http.ServeMux, prefix, name string, h http.Handler, log *slog.Logger) {
	bare := strings.TrimSuffix(prefix, "/")
	strip := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = "/" + strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, bare), "/")
		if u.RawPath != "" {
			u.RawPath = "/" + strings.TrimPrefix(strings.TrimPrefix(r.URL.RawPath, bare), "/")
		}
		r2.URL = &u
		r2.RequestURI = u.RequestURI()
		h.ServeHTTP(w, r2)
	})
	lh := logged(name, strip, log)
	mux.Handle(prefix, lh)
	mux.Handle(bare, lh)
}

// notFound answers a path outside the three mounts.
func notFound(w http.ResponseWriter, _ *http.Request) {
	d := protocol.NewDiagnostic(protocol.CodeRequestNotFound)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(protocol.HTTPStatus(d.Code))
	_, _ = w.Write(protocol.EncodeErrorBody(d))
}

// logged writes one log line per request after h has served it.
func logged(mountName string, h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", safeMethod(r.Method)),
			slog.String("mount", mountName),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Int64("durationMs", time.Since(start).Milliseconds()))
	})
}

// recorder remembers the status and counts the bytes written through it.
// It passes Flush on (the turn stream flushes each line) and unwraps for
// http.ResponseController.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client now.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// safeMethod returns m when it is a standard method and "other" otherwise,
// so that no arbitrary client token reaches the log.
func safeMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// loopback reports whether addr's host is a loopback IP or "localhost".
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newStore returns the in-memory store, or the DynamoDB store on
// cfg.TableName at cfg.DynamoDBEndpoint when that is set, creating the
// table when it does not exist (dynamo.EnsureTable: a table another dev
// server creates at the same moment counts as present). Should the table
// vanish while the server runs (DynamoDB Local or dynalite restarted
// without its data), the next request recreates it empty
// (dynamo.RecreateMissingTable) and log reports it. Local servers accept
// any credentials: staticCredentials uses placeholders instead of the
// SDK's chain. desc says which store, for the start banner.
func newStore(ctx context.Context, cfg config.Config, staticCredentials bool, log *slog.Logger) (store chat.Store, desc string, err error) {
	if cfg.DynamoDBEndpoint == "" {
		return memory.New(memory.Options{CursorKey: cfg.CursorSecret}), "in-memory store", nil
	}
	opts := dynamo.ClientOptions{
		Endpoint:          cfg.DynamoDBEndpoint,
		AttemptTimeout:    cfg.DynamoDBAttemptTimeout,
		Region:            cfg.Region,
		StaticCredentials: staticCredentials,
	}
	admin, err := dynamo.NewClient(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("dynamodb client: %w", err)
	}
	created, err := dynamo.EnsureTable(ctx, admin, cfg.TableName)
	if err != nil {
		return nil, "", err
	}
	client, err := dynamo.NewClient(ctx, opts, dynamo.RecreateMissingTable(admin, cfg.TableName, func() {
		log.Warn("the DynamoDB table was missing (was DynamoDB restarted without its data?): recreated it, empty",
			"table", cfg.TableName)
	}))
	if err != nil {
		return nil, "", fmt.Errorf("dynamodb client: %w", err)
	}
	desc = fmt.Sprintf("DynamoDB table %s at %s", cfg.TableName, cfg.DynamoDBEndpoint)
	if created {
		desc += " (created)"
	}
	return dynamo.New(client, dynamo.Options{Table: cfg.TableName, CursorKey: cfg.CursorSecret}), desc, nil
}
