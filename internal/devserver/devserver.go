// Package devserver builds the dev server's http.Handler: turnstream's
// three functions mounted on one local port, as cmd/devserver serves them
// and cmd/turnbench measures them.
//
// NewHandler mounts the turn handler under TurnMount, the history handler
// under HistoryMount and the artifacts handler under ArtifactsMount, each
// with its prefix stripped (from the path and, when set, the raw path), so
// that every handler sees "/" exactly as behind its own function URL. A
// mount without its trailing slash ("/turn") is served as "/" too, so that
// POST /turn is not turned into a GET by a redirect. The root "/" serves
// the demo chat page (internal/demo); any other path answers the
// protocol's REQUEST_NOT_FOUND. Every request is logged as one line
// (method, mount, status, bytes, duration; never a path, query or body
// byte).
//
// NewStore picks the store a configuration names: in memory, or DynamoDB
// at DYNAMODB_ENDPOINT with its table created when absent.
package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/demo"
	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/internal/turnsetup"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
	"github.com/turnstream/turnstream/pkg/turn"
)

// Mount points of the three handlers.
const (
	TurnMount      = "/turn/"
	HistoryMount   = "/history/"
	ArtifactsMount = "/artifacts/"
	// UploadsMount serves Options.Uploads: the attachments' upload forms
	// and signed downloads (docs/attachments.md).
	UploadsMount = "/uploads/"
	// MCPDemoMount serves a demo MCP server (internal/mcptest's tools:
	// add, fail, hang, big, picture, shape) for trying a definition's
	// mcpServers locally (docs/mcp.md): http://127.0.0.1:8787/mcp-demo.
	MCPDemoMount = "/mcp-demo"
)

// Options are what NewHandler builds the handler from.
type Options struct {
	// Config supplies the definitions and their models (echo, bedrock or
	// openai: docs/providers.md), the turn timings and the body limit
	// (pkg/config).
	Config config.Config
	// Store and Authenticator serve all three handlers. Required.
	Store         chat.Store
	Authenticator auth.Authenticator
	// HandlerLog receives the handlers' own records, RequestLog the line
	// per request; nil discards them.
	HandlerLog, RequestLog *slog.Logger
	// ReadFile reads DEFINITIONS_FILE; nil means os.ReadFile.
	ReadFile func(name string) ([]byte, error)
	// Turn, when set, adjusts the turn handler's options just before the
	// handler is built (a benchmark's model of its own, a shorter
	// lease); nil leaves them as Config says.
	Turn func(*turn.Options)
	// Telemetry gives each handler its metrics (the Function dimension
	// is the mount's function: turn, history, artifacts) and spans; nil
	// means none.
	Telemetry *telemetrysetup.Set
	// Uploads, when set, holds attachments: the artifacts handler signs
	// uploads into it and it is served under UploadsMount, so its base
	// URL must be the server's own origin and UploadsMount without its
	// trailing slash (s3attach.NewLocal). Nil: no attachment routes.
	Uploads *s3attach.Local
	// Now is the history handler's clock (which day and month GET /usage
	// reports); nil means time.Now. Tests set it with the turn handler's.
	Now func() time.Time
}

// NewHandler returns the three handlers and the demo page mounted behind
// the request log; the turn handler is the configuration's, as the turn
// function builds it (internal/turnsetup: the demo tools workspace_note
// and workspace_note_delete, which definitions may offer), with the
// model of each definition's provider (models: echo by default; bedrock
// and openai reached as a developer's machine reaches them). It returns
// an error for a provider without credentials (ErrNoCredentials), a
// definition the configuration gets wrong, or handler options
// turn.NewHandler rejects.
func NewHandler(o Options) (http.Handler, error) {
	cfg := o.Config
	handlerLog, requestLog := orDiscard(o.HandlerLog), orDiscard(o.RequestLog)
	turnHandler, err := turnsetup.NewHandler(cfg, turnsetup.Deps{
		Store: o.Store, Authenticator: o.Authenticator, ReadFile: o.ReadFile, Logger: handlerLog, Adjust: o.Turn,
		Attachments: uploads(o.Uploads),
		Metrics:     o.Telemetry.Metrics("turn"), Tracing: o.Telemetry.Tracer(),
		Models: func(defs *definition.Resolver) (map[string]model.Model, error) {
			return models(context.Background(), cfg, defs)
		},
		// Every MCP server of the definitions; a header that names a
		// secret is refused (the turn function reads those).
		ToolSources: func(defs *definition.Resolver) (map[string][]tool.Source, error) {
			return mcp.ForDefinitions(context.Background(), defs.All(), nil, mcp.Options{Logger: handlerLog})
		},
	})
	if err != nil {
		return nil, err
	}
	sessionOpts := sessionapi.Options{
		Store:         o.Store,
		Authenticator: o.Authenticator,
		Logger:        handlerLog,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		Tracing:       o.Telemetry.Tracer(),
		Now:           o.Now,
	}
	sessionOpts.Attachments = uploads(o.Uploads)
	if cfg.Usage.Ledger {
		readFile := o.ReadFile
		if readFile == nil {
			readFile = os.ReadFile
		}
		q, err := definition.DefaultQuotas(cfg.Definitions(), readFile)
		if err != nil {
			return nil, fmt.Errorf("quotas: %w", err)
		}
		sessionOpts.Usage = &sessionapi.UsageOptions{Quotas: q}
	}
	sessionOpts.Metrics = o.Telemetry.Metrics("history")
	historyHandler, err := sessionapi.NewHistoryHandler(sessionOpts)
	if err != nil {
		return nil, fmt.Errorf("history handler: %w", err)
	}
	sessionOpts.Metrics = o.Telemetry.Metrics("artifacts")
	artifactsHandler, err := sessionapi.NewArtifactsHandler(sessionOpts)
	if err != nil {
		return nil, fmt.Errorf("artifacts handler: %w", err)
	}
	sessionOpts.Metrics = o.Telemetry.Metrics("turn")
	exportHandler, err := sessionapi.NewExportHandler(sessionOpts)
	if err != nil {
		return nil, fmt.Errorf("export handler: %w", err)
	}
	mux := http.NewServeMux()
	mount(mux, TurnMount, "turn", sessionapi.WithExport(exportHandler, turnHandler), requestLog)
	mount(mux, HistoryMount, "history", historyHandler, requestLog)
	mount(mux, ArtifactsMount, "artifacts", artifactsHandler, requestLog)
	if o.Uploads != nil {
		mount(mux, UploadsMount, "uploads", o.Uploads.Handler(), requestLog)
	}
	mux.Handle(MCPDemoMount, logged("mcp-demo", mcptest.New(mcptest.Options{}).Handler(), requestLog))
	mux.Handle("/", logged("demo", demo.NewHandler(o.Config.Page, http.HandlerFunc(httpedge.NotFound)), requestLog))
	return canonicalPaths(mux, requestLog), nil
}

// uploads is u as an attach.Store: nil (no attachments) when u is nil.
func uploads(u *s3attach.Local) attach.Store {
	if u == nil {
		return nil
	}
	return u
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// mount serves h under prefix (ending in "/") and under prefix without its
// slash, stripping it from the path and the raw path so that h sees "/..."
// as behind its function URL.
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

// logged writes one log line per request after h has served it.
func logged(mountName string, h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &httpedge.Recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.Status == 0 {
			rec.Status = http.StatusOK
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", httpedge.SafeMethod(r.Method)),
			slog.String("mount", mountName),
			slog.Int("status", rec.Status),
			slog.Int64("bytes", rec.Bytes),
			slog.Int64("durationMs", time.Since(start).Milliseconds()))
	})
}

// NewStore returns the in-memory store, or the DynamoDB store on
// cfg.TableName at cfg.DynamoDBEndpoint when that is set, creating the
// table when it does not exist (dynamo.EnsureTable: a table another dev
// server creates at the same moment counts as present). Should the table
// vanish while the server runs (DynamoDB Local or dynalite restarted
// without its data), the next request recreates it empty
// (dynamo.RecreateMissingTable) and log reports it. Local servers accept
// any credentials: staticCredentials uses placeholders instead of the
// SDK's chain. desc says which store, for the start banner.
func NewStore(ctx context.Context, cfg config.Config, staticCredentials bool, log *slog.Logger, tel *telemetrysetup.Set) (store chat.Store, desc string, err error) {
	ledger := chat.LedgerOptions{Enabled: cfg.Usage.Ledger, Retention: cfg.Usage.LedgerRetention}
	if cfg.DynamoDBEndpoint == "" {
		return memory.New(memory.Options{CursorKey: cfg.CursorSecret, Ledger: ledger}), "in-memory store", nil
	}
	opts := dynamo.ClientOptions{
		Endpoint:          cfg.DynamoDBEndpoint,
		AttemptTimeout:    cfg.DynamoDBAttemptTimeout,
		Region:            cfg.Region,
		StaticCredentials: staticCredentials,
	}
	admin, err := dynamo.NewClient(ctx, opts)
	opts.TracerProvider = tel.SDKTracerProvider() // the store's requests only, not the table's set-up
	if err != nil {
		return nil, "", fmt.Errorf("dynamodb client: %w", err)
	}
	created, err := dynamo.EnsureTable(ctx, admin, cfg.TableName)
	if err != nil {
		return nil, "", err
	}
	client, err := dynamo.NewClient(ctx, opts, dynamo.RecreateMissingTable(admin, cfg.TableName, func() {
		orDiscard(log).Warn("the DynamoDB table was missing (was DynamoDB restarted without its data?): recreated it, empty",
			"table", cfg.TableName)
	}))
	if err != nil {
		return nil, "", fmt.Errorf("dynamodb client: %w", err)
	}
	desc = fmt.Sprintf("DynamoDB table %s at %s", cfg.TableName, cfg.DynamoDBEndpoint)
	if created {
		desc += " (created)"
	}
	return dynamo.New(client, dynamo.Options{Table: cfg.TableName, CursorKey: cfg.CursorSecret, Ledger: ledger}), desc, nil
}
