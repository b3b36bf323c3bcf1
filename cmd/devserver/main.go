// Command devserver runs turnstream's three functions on one local port
// with real chunked streaming (docs/design.md#running-it):
//
//	go run ./cmd/devserver [-addr 127.0.0.1:8787] [-read-timeout 30s]
//
// It serves internal/devserver's handler: the turn handler under /turn/
// (POST /turn/ submits a turn, POST /turn/stop stops one, GET
// /turn/capabilities), the history handler under /history/ and the
// artifacts handler under /artifacts/, each with its prefix stripped, so
// every handler sees "/" exactly as behind its own function URL.
//
// Configuration is pkg/config's environment (docs/design.md#configuration)
// plus ADDR (or -addr, which wins). AUTH_MODE defaults to dev: "Authorization:
// Bearer dev.<subject>" names the principal, no header means subject "local",
// and subject "host" may write artifact references. Dev auth listens on
// loopback addresses only. The store is in memory unless DYNAMODB_ENDPOINT
// names a DynamoDB API server (DynamoDB Local, dynalite), where the table
// TABLE_NAME is created when absent, also when it vanishes while the server
// runs (internal/devserver.NewStore). The model is the offline echo model
// unless MODEL_PROVIDER names bedrock (the AWS SDK's standard credential
// chain and endpoint variables) or openai (OPENAI_BASE_URL, OPENAI_API_KEY;
// docs/providers.md), whose missing credentials fail the start;
// definitions come from pkg/config as in the turn function (definition.Load),
// and the demo tool workspace_note is registered and, unless MODEL_TOOLS or
// DEFINITIONS_FILE is set, offered by the default definition, so that "/note
// <title>: <body>" makes the echo model call it (pkg/model/echo): the turn's
// snapshots show the tool call (complete; the instant demo tool's running
// state is coalesced away, docs/design.md#snapshots) and the turn records the
// note's artifact reference. The demo tool workspace_note_delete is offered
// too and requires approval: "/delete <title>" ends the turn with the call
// waiting (requires_confirmation) until a decision turn approves or denies it
// (docs/approvals.md).
//
// The root "/" serves the demo chat page (internal/demo), built from
// clients/js and embedded in the binary. Any other path, and a path that
// is not canonical ("//", a "." or ".." segment), is the JSON 404
// REQUEST_NOT_FOUND, never a redirect.
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

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/internal/testidp"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/tool"
)

// DefaultAddr is where the dev server listens unless -addr or ADDR says
// otherwise (docs/design.md#running-it).
const DefaultAddr = "127.0.0.1:8787"

// ShutdownGrace bounds how long a shutdown waits for running requests
// (streaming turns included) before closing their connections.
const ShutdownGrace = 10 * time.Second

// Connection timeouts of the local server (Lambda delivers a request's body
// whole, so only the dev server needs them). DefaultReadTimeout bounds
// reading one request, header and body (-read-timeout): a client whose
// body stalls or trickles is answered 408 SERVER_TIMEOUT and disconnected
// once it passes. The header must arrive within headerTimeout (or the read
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
	signin := fs.String("signin", "", `"local": the chat page signs in through a local OpenID Connect issuer (any name, no password) and the functions read its tokens (AUTH_MODE jwt)`)
	signinTTL := fs.Duration("signin-token-ttl", testidp.DefaultAccessTTL, "with -signin local: how long its access tokens last")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *readTimeout <= 0 {
		return fmt.Errorf("-read-timeout %s: want a positive duration", *readTimeout)
	}
	switch {
	case *signin != "" && *signin != "local":
		return fmt.Errorf("-signin %q: want local, or leave it out", *signin)
	case *signinTTL < time.Minute+10*time.Second || *signinTTL > 24*time.Hour:
		// The page renews a minute before expiry: a shorter token would
		// be renewed as soon as it arrives.
		return fmt.Errorf("-signin-token-ttl %s: want 70s..24h", *signinTTL)
	}

	cfg, err := config.FromLookup(lookupEnv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if _, set := lookupEnv("MODEL_TOOLS"); !set && cfg.Model.DefinitionsFile == "" {
		cfg.Model.Tools = []string{tool.WorkspaceNoteName, tool.WorkspaceNoteDeleteName}
		cfg.Model.ApprovalTools = []string{tool.WorkspaceNoteDeleteName}
	}
	if *signin == "local" && !loopback(*addr) {
		return fmt.Errorf("-addr %s: the local issuer signs in anyone; listen on a loopback address", *addr)
	}
	if cfg.Auth.Mode == config.AuthDev && *signin == "" && !loopback(*addr) {
		return fmt.Errorf("-addr %s: AUTH_MODE dev lets any caller name any principal; listen on a loopback address", *addr)
	}

	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// The handlers log below the request line: warnings and errors only,
	// everything when LOG_LEVEL is debug.
	handlerLog := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: max(cfg.LogLevel, slog.LevelWarn)}))
	if cfg.LogLevel <= slog.LevelDebug {
		handlerLog = log
	}

	// EMF documents (TELEMETRY_METRICS=emf) go to the log, one line each,
	// as on Lambda; spans to OTEL_EXPORTER_OTLP_ENDPOINT when set.
	tel, err := telemetrysetup.New(cfg.Telemetry, stdout, "devserver", "turn", "history", "artifacts")
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	defer func() {
		// The process ends: the last spans go out, within a bound.
		shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		defer cancel()
		_ = tel.Shutdown(shutdownCtx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer func() { _ = ln.Close() }() // after a failed set-up; Serve has closed it otherwise
	base := "http://" + ln.Addr().String()
	var issuer *localIssuer
	if *signin == "local" {
		if issuer, err = startLocalIssuer(ln.Addr(), *signinTTL, &cfg); err != nil {
			return fmt.Errorf("-signin local: %w", err)
		}
		defer issuer.close()
	}

	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	_, haveKeys := lookupEnv("AWS_ACCESS_KEY_ID")
	store, storeDesc, err := devserver.NewStore(setupCtx, cfg, !haveKeys, log, tel)
	if err != nil {
		return err
	}
	authn, err := auth.New(setupCtx, cfg.Auth, auth.WithLookupEnv(lookupEnv))
	if err != nil {
		return fmt.Errorf("authenticator: %w", err)
	}
	cancel()

	h, err := devserver.NewHandler(devserver.Options{
		Config: cfg, Store: store, Authenticator: authn, HandlerLog: handlerLog, RequestLog: log,
		Telemetry: tel,
		Uploads:   s3attach.NewLocal(base+strings.TrimSuffix(devserver.UploadsMount, "/"), nil),
	})
	if err != nil {
		return err
	}
	modelDesc := "echo model"
	if cfg.Model.Provider != config.ProviderEcho {
		modelDesc = cfg.Model.Provider + " model " + cfg.Model.ModelID
	}
	_, _ = fmt.Fprintf(stdout, "turnstream dev server (auth %s, %s, %s)\n", cfg.Auth.Mode, storeDesc, modelDesc)
	_, _ = fmt.Fprintf(stdout, "  turn:      %s%s\n", base, devserver.TurnMount)
	_, _ = fmt.Fprintf(stdout, "  history:   %s%s\n", base, devserver.HistoryMount)
	_, _ = fmt.Fprintf(stdout, "  artifacts: %s%s\n", base, devserver.ArtifactsMount)
	_, _ = fmt.Fprintf(stdout, "  chat page: %s/\n", base)
	if issuer != nil {
		_, _ = fmt.Fprintf(stdout, "  sign-in:   %s (the local issuer: any name, no password)\n", issuer.provider.Issuer())
	}

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
