// Package mcp offers the tools of remote Model Context Protocol servers
// to a definition's turns (docs/mcp.md), through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) over Streamable HTTP.
//
// A Source is one server of a definition (definition.MCPServer) for the
// life of a process: it lists the server's tools once and keeps the
// listing for a TTL, as a tool.Registry whose tools are named
// "<server>__<tool>" and validated against the server's input schemas
// like local tools. A call runs under the turn's context and the
// server's timeout. Whatever goes wrong (the server's isError, a refusal,
// a transport failure, a timeout) becomes a tool error the model reads,
// never a failed turn. A call is never sent twice, except after the
// server answered 404 for its session (it ran nothing): a call whose
// outcome is unknown is reported so.
//
// The client keeps one MCP session per server and process (the server
// may be stateless, then there is none), and opens no standalone SSE
// stream: a Lambda function is frozen between invocations.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/tool"
)

// Defaults and limits of a Source.
const (
	// DefaultTTL is how long a listing is kept (Options.TTL): a server's
	// new or changed tools reach turns within it.
	DefaultTTL = 5 * time.Minute
	// DownTTL is how long a failed listing is remembered: the turns of
	// that time go without the server's tools at once, instead of each
	// waiting for it.
	DownTTL = 30 * time.Second
	// ListTimeout bounds one listing (all its pages, and the session's
	// handshake), within the turn's context.
	ListTimeout = 10 * time.Second
	// MaxTools bounds the tools taken from one server's listing.
	MaxTools = 128
	// maxListPages bounds the pages of one listing.
	maxListPages = 16
	// MaxErrorTextBytes bounds the text of a tool error the server
	// reported (isError) as the model reads it.
	MaxErrorTextBytes = 4 << 10
)

// Texts the model reads for failures on the way to the server (the
// server's own isError text is passed on, cut to MaxErrorTextBytes).
const (
	TextUnreachable = "The tool server could not be reached; the call did not run."
	TextUnknown     = "The tool server did not answer; whether the call took effect is unknown."
	TextRefused     = "The tool server answered the call with an error."
)

// ErrDown wraps a listing failure (Tools), and is what Tools returns for
// DownTTL after one.
var ErrDown = errors.New("mcp: server could not be listed")

// Options tune a Source; the zero value is usable.
type Options struct {
	// HTTPClient sends the requests (nil: a client of its own). Its
	// Timeout, if any, bounds every request; a call is bounded anyway by
	// its context.
	HTTPClient *http.Client
	// Header is sent with every request (the server's resolved headers,
	// ResolveHeaders).
	Header http.Header
	// Clock times the listing's TTL (nil: clock.Real).
	Clock clock.Clock
	// TTL is how long a listing is kept (0: DefaultTTL).
	TTL time.Duration
	// Logger gets the listing's warnings (nil: slog.Default()). Header
	// values are never logged.
	Logger *slog.Logger
}

// Source is one MCP server's tools, for every turn of a process. Its
// methods are safe for concurrent use.
type Source struct {
	server definition.MCPServer
	opts   Options
	client *mcpsdk.Client
	http   *http.Client

	// listing makes concurrent turns that find the listing expired wait
	// for one listing instead of each sending its own.
	listing sync.Mutex

	mu       sync.Mutex
	session  *mcpsdk.ClientSession
	reg      *tool.Registry
	listedAt time.Time
	failedAt time.Time
	failure  error
	skipped  []string
}

// New returns the Source of server; nothing is sent before the first
// Tools.
func New(server definition.MCPServer, opts Options) *Source {
	opts.Clock = clock.Or(opts.Clock)
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	hc := *base
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = headerTransport{header: opts.Header.Clone(), next: next}
	return &Source{
		server: server,
		opts:   opts,
		http:   &hc,
		client: mcpsdk.NewClient(&mcpsdk.Implementation{Name: "turnstream", Version: "1"}, nil),
	}
}

// Name returns the server's name (definition.MCPServer.Name).
func (s *Source) Name() string { return s.server.Name }

// Tools returns the server's tools as a registry (see the package
// documentation), listed now or kept from a listing less than the TTL
// old. A server that cannot be listed is an error wrapping ErrDown, for
// DownTTL after the failure; its tools are then left out of the turn. A
// listing cut short by ctx is an error for this call only.
// Tools the listing had to leave out (a name the model cannot take, a
// schema that does not compile, past MaxTools) are logged once per
// listing.
func (s *Source) Tools(ctx context.Context) (*tool.Registry, error) {
	if reg, err, ok := s.cached(); ok {
		return reg, err
	}
	s.listing.Lock()
	defer s.listing.Unlock()
	if reg, err, ok := s.cached(); ok {
		return reg, err
	}
	reg, skipped, err := s.list(ctx)
	if err != nil && ctx.Err() != nil {
		// The turn ended (a stop, its deadline): the server is not known
		// to be down, and the next turn asks it again.
		return nil, fmt.Errorf("%w: %s: %w", ErrDown, s.server.Name, ctx.Err())
	}
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failure, s.failedAt = fmt.Errorf("%w: %s: %w", ErrDown, s.server.Name, err), now
		s.opts.Logger.Warn("mcp server could not be listed", "server", s.server.Name, "err", err)
		return nil, s.failure
	}
	s.reg, s.listedAt, s.failure, s.skipped = reg, now, nil, skipped
	if len(skipped) > 0 {
		s.opts.Logger.Warn("mcp tools left out", "server", s.server.Name, "tools", skipped)
	}
	return reg, nil
}

// cached returns the kept listing or failure, if still fresh.
func (s *Source) cached() (*tool.Registry, error, bool) {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil && now.Before(s.failedAt.Add(DownTTL)) {
		return nil, s.failure, true
	}
	if s.reg != nil && now.Before(s.listedAt.Add(s.opts.TTL)) {
		return s.reg, nil, true
	}
	return nil, nil, false
}

// modelToolName reports whether a model takes name as a tool name
// (model.ToolSpec): 1..64 of [A-Za-z0-9_-]. (A loop: a regexp with a
// bounded repetition costs its bound in compiled program at start-up.)
func modelToolName(name string) bool {
	if len(name) == 0 || len(name) > tool.MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// list lists the server's tools into a new registry.
func (s *Source) list(ctx context.Context) (*tool.Registry, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	var tools []*mcpsdk.Tool
	err := s.withSession(ctx, func(cs *mcpsdk.ClientSession) error {
		tools = tools[:0]
		params := &mcpsdk.ListToolsParams{}
		for page := 0; ; page++ {
			if page == maxListPages {
				return fmt.Errorf("more than %d pages of tools", maxListPages)
			}
			res, err := cs.ListTools(ctx, params)
			if err != nil {
				return err
			}
			tools = append(tools, res.Tools...)
			if res.NextCursor == "" {
				return nil
			}
			params = &mcpsdk.ListToolsParams{Cursor: res.NextCursor}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	reg := tool.NewRegistry(nil)
	var skipped []string
	taken := 0 // tools offered so far, at most MaxTools
	for _, t := range tools {
		if t == nil {
			continue
		}
		if s.server.AllowedTools != nil && !slices.Contains(s.server.AllowedTools, t.Name) {
			continue
		}
		name := s.server.Name + definition.MCPToolSeparator + t.Name
		if !modelToolName(name) || reg.Has(name) || taken == MaxTools {
			skipped = append(skipped, t.Name)
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			skipped = append(skipped, t.Name)
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" {
			desc = "Tool " + t.Name + " of the " + s.server.Name + " server."
		}
		taken++
		err = reg.Register(tool.Tool{
			Name:        name,
			Description: desc,
			InputSchema: schema,
			Timeout:     s.server.Timeout,
			Approval:    s.server.Approval.Requires(t.Name),
			Server:      s.server.Name,
			Call:        s.caller(t.Name),
		})
		if err != nil {
			taken--
			skipped = append(skipped, t.Name)
		}
	}
	return reg, skipped, nil
}

// withSession runs f with the process's session of the server, opening
// one (the initialize handshake) when there is none. A session the
// server no longer knows (404: it ran nothing) is opened again, once,
// and f run again; any other failure of f drops the session, so the next
// use opens a fresh one.
func (s *Source) withSession(ctx context.Context, f func(*mcpsdk.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		cs, err := s.open(ctx)
		if err != nil {
			return &notSent{err}
		}
		err = f(cs)
		if err == nil {
			return nil
		}
		if answered(err) {
			return err // the server answered: the session is fine
		}
		s.drop(cs)
		if attempt == 0 && errors.Is(err, mcpsdk.ErrSessionMissing) {
			continue
		}
		return err
	}
}

// notSent marks a failure before anything of the request was sent.
type notSent struct{ err error }

func (e *notSent) Error() string { return "open session: " + e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

// open returns the kept session or opens one.
func (s *Source) open(ctx context.Context) (*mcpsdk.ClientSession, error) {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	transport := &mcpsdk.StreamableClientTransport{
		Endpoint:             s.server.URL,
		HTTPClient:           s.http,
		DisableStandaloneSSE: true,
		// A response stream that breaks is picked up again by event id
		// (the call is not sent again); twice at most, within ctx.
		MaxRetries: 2,
	}
	cs, err := s.client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil { // another turn opened one meanwhile: keep that
		go func() { _ = cs.Close() }()
		return s.session, nil
	}
	s.session = cs
	return cs, nil
}

// drop forgets cs (closing it in the background) if it is still the kept
// session.
func (s *Source) drop(cs *mcpsdk.ClientSession) {
	s.mu.Lock()
	if s.session == cs {
		s.session = nil
	}
	s.mu.Unlock()
	go func() { _ = cs.Close() }()
}

// headerTransport adds the server's headers to every request.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.header) == 0 {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = append([]string(nil), v...)
	}
	return t.next.RoundTrip(r)
}

// ResolveHeaders returns server's request headers, each secret read
// with secret (a Secrets Manager read, once per process). An error names
// the header, never a value.
func ResolveHeaders(ctx context.Context, server definition.MCPServer, secret func(ctx context.Context, id string) (string, error)) (http.Header, error) {
	h := http.Header{}
	for _, hd := range server.Headers {
		v := hd.Value
		if hd.SecretID != "" {
			if secret == nil {
				return nil, fmt.Errorf("mcp: server %s: header %s: no secret reader", server.Name, hd.Name)
			}
			sv, err := secret(ctx, hd.SecretID)
			if err != nil {
				return nil, fmt.Errorf("mcp: server %s: header %s: read secret: %w", server.Name, hd.Name, err)
			}
			if strings.ContainsAny(sv, "\r\n\x00") {
				return nil, fmt.Errorf("mcp: server %s: header %s: the secret's value is not one line", server.Name, hd.Name)
			}
			v = hd.Prefix + sv
		}
		h.Set(hd.Name, v)
	}
	return h, nil
}

// ForDefinitions returns the Sources of every definition's MCP servers,
// by definition id (turn.Config.ToolSources): each server's headers
// resolved now, each secret read once with secret (nil: a definition
// whose headers name a secret is an error). The definitions with no
// server have no entry. opts apply to every Source (its Header is each
// server's own).
func ForDefinitions(ctx context.Context, defs []definition.Definition, secret func(ctx context.Context, id string) (string, error), opts Options) (map[string][]tool.Source, error) {
	out := map[string][]tool.Source{}
	read := map[string]string{} // a secret named twice is read once
	cached := func(ctx context.Context, id string) (string, error) {
		if v, ok := read[id]; ok {
			return v, nil
		}
		if secret == nil {
			return "", errors.New("secretId headers need Secrets Manager, which this process does not read")
		}
		v, err := secret(ctx, id)
		if err == nil {
			read[id] = v
		}
		return v, err
	}
	for _, d := range defs {
		for _, server := range d.MCPServers {
			h, err := ResolveHeaders(ctx, server, cached)
			if err != nil {
				return nil, fmt.Errorf("definition %s: %w", d.ID, err)
			}
			o := opts
			o.Header = h
			out[d.ID] = append(out[d.ID], New(server, o))
		}
	}
	return out, nil
}
