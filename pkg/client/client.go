package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Options configure a Client. TurnURL is required; the others are needed
// only by the calls that use them.
type Options struct {
	// TurnURL is the turn function's base URL, e.g.
	// "https://<id>.lambda-url.<region>.on.aws/" or, on the dev server,
	// "http://127.0.0.1:8787/turn/". Submits go to it; stop, capabilities
	// and the resume route to paths below it.
	TurnURL string
	// HistoryURL is the history function's base URL (Session, Turns,
	// Messages and their pages).
	HistoryURL string
	// ArtifactsURL is the artifacts function's base URL (Artifacts,
	// PutArtifacts).
	ArtifactsURL string
	// HTTPClient sends the requests; http.DefaultClient when nil. Its
	// Timeout, if any, bounds whole streams: prefer contexts.
	HTTPClient *http.Client
	// Auth adds the caller's credentials to every request; nil sends
	// none (the dev server's "local" caller).
	Auth Authenticator
	// Resume is what a stream does when it drops before its terminal
	// line: ResumeAuto (the default) resumes it over the resume route
	// when the capabilities offer it; ResumeOff never does.
	Resume ResumeMode
	// ResumeAttempts is how many resumes in a row without a new snapshot
	// a stream tries before it gives up (default 5), the first after
	// ResumeBackoff (default 250 ms), each later one after twice the last
	// wait, at most MaxResumeBackoff (default 4 s).
	ResumeAttempts   int
	ResumeBackoff    time.Duration
	MaxResumeBackoff time.Duration
	// Compact asks for the compact stream on every submit and resume
	// (docs/compact.md); StreamOptions.Compact asks for it per stream.
	Compact bool
}

// ResumeMode is Options.Resume.
type ResumeMode int

// Resume modes.
const (
	ResumeAuto ResumeMode = iota
	ResumeOff
)

// Default resume limits (Options).
const (
	DefaultResumeAttempts   = 5
	DefaultResumeBackoff    = 250 * time.Millisecond
	DefaultMaxResumeBackoff = 4 * time.Second
)

// Bounds of the client's own waits.
const (
	// capabilitiesTimeout bounds GET /capabilities.
	capabilitiesTimeout = 10 * time.Second
	// resumeOpenTimeout bounds the wait for a resume stream's response
	// header (not its body, which lasts as long as the turn).
	resumeOpenTimeout = 30 * time.Second
	// maxErrorBody is how much of an error answer is kept (Error.Body).
	maxErrorBody = 64 << 10
	// maxJSONBody bounds a JSON answer (a history page, capabilities).
	maxJSONBody = 32 << 20
)

// Client speaks turnstream's HTTP API to one deployment: the turn
// function (submit, resume, stop, decisions, capabilities), the history
// function (the session summary and its pages) and the artifacts
// function. It holds no per-turn state: each submit returns its own
// Stream. A Client is safe for concurrent use.
type Client struct {
	opts Options
	http *http.Client

	mu   sync.Mutex
	caps *Capabilities // fetched once, when a call first needs them
}

// New returns a client for opts. It returns an error when TurnURL, or a
// URL that is set, is not an absolute http(s) URL.
func New(opts Options) (*Client, error) {
	for name, u := range map[string]string{"TurnURL": opts.TurnURL, "HistoryURL": opts.HistoryURL, "ArtifactsURL": opts.ArtifactsURL} {
		if u == "" && name != "TurnURL" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("client: %s %q is not an absolute http(s) URL", name, u)
		}
	}
	if opts.ResumeAttempts <= 0 {
		opts.ResumeAttempts = DefaultResumeAttempts
	}
	if opts.ResumeBackoff <= 0 {
		opts.ResumeBackoff = DefaultResumeBackoff
	}
	if opts.MaxResumeBackoff <= 0 {
		opts.MaxResumeBackoff = DefaultMaxResumeBackoff
	}
	c := &Client{opts: opts, http: opts.HTTPClient}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	return c, nil
}

// Errors of calls whose input or configuration is wrong (no request is
// sent).
var (
	// ErrInvalidID: a session, turn or confirmation id is not a SafeId.
	ErrInvalidID = errors.New("client: id is not a SafeId")
	// ErrNoURL: the call needs Options.HistoryURL or ArtifactsURL.
	ErrNoURL = errors.New("client: the function URL this call needs is not configured")
	// ErrResumeUnavailable: the turn function does not offer the resume
	// route (its capabilities do not list it, or cannot be read).
	ErrResumeUnavailable = errors.New("client: the turn function does not offer resume")
	// ErrInvalidPolicy: Submit.Multitask is not one of api.MultitaskPolicies.
	ErrInvalidPolicy = errors.New("client: unknown multitask policy")
)

// joinURL returns base with route appended to its path, without its query.
func joinURL(base, route string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + route
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	u.RawPath = ""
	u.RawQuery = ""
	return u.String()
}

// send authenticates and sends req, and turns a non-2xx answer into a
// KindHTTP *Error (its body read and closed) and a failed request into a
// KindNetwork one; when req's context has ended it returns ctx.Err().
func (c *Client) send(req *http.Request, op string) (*http.Response, error) {
	if c.opts.Auth != nil {
		if err := c.opts.Auth.Authenticate(req); err != nil {
			return nil, err
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if cerr := req.Context().Err(); cerr != nil {
			return nil, cerr
		}
		return nil, networkError(op, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, httpError(op, resp.StatusCode, resp.Header, body)
}

// httpError reads an error answer: the protocol's {"error":{...}} body,
// or a function URL front end's {"Message":"..."}.
func httpError(op string, status int, header http.Header, body []byte) *Error {
	e := &Error{Kind: KindHTTP, Op: op, Status: status, Header: header, Body: body, Sequence: -1}
	var wire struct {
		api.ErrorBody
		Message string `json:"Message"`
	}
	if json.Unmarshal(body, &wire) == nil && wire.Error != nil && wire.Error.Code != "" {
		e.Diagnostic = *wire.Error
		e.Diagnostic.Version = 1
		return e
	}
	e.FunctionURLMessage = wire.Message
	e.Diagnostic = clientDiagnostic(CodeResponseInvalid, fmt.Sprintf("The server answered HTTP %d without an error body.", status), retryableStatus(status))
	return e
}

// getJSON GETs target and decodes its JSON answer into v.
func (c *Client) getJSON(ctx context.Context, target, op string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.send(req, op)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return networkError(op, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidResponse(op, resp.StatusCode)
	}
	return nil
}

// Stop asks the running turn to end (POST {TurnURL}stop, answered 202):
// its stream then ends with a terminal snapshot, status error and code
// TURN_INTERRUPTED, within about a checkpoint interval
// (docs/durable-turns.md). On Lambda a client that leaves a stream does
// not stop its turn; Stop does. A queued turn that has not started is
// cancelled instead (StopTurn tells the two apart). A turn that already
// ended is a KindHTTP *Error TURN_NOT_ACTIVE (409).
func (c *Client) Stop(ctx context.Context, sessionID, turnID string) error {
	_, _, err := c.stop(ctx, sessionID, turnID)
	return err
}

// StopAnswer is the 202 answer of POST {TurnURL}stop (api.StopAnswer).
type StopAnswer = api.StopAnswer

// StopTurn is Stop returning the answer: whether a running turn was asked
// to stop or a queued one cancelled. A 202 whose body is not a StopAnswer
// is a KindInvalidResponse *Error.
func (c *Client) StopTurn(ctx context.Context, sessionID, turnID string) (*StopAnswer, error) {
	raw, status, err := c.stop(ctx, sessionID, turnID)
	if err != nil {
		return nil, err
	}
	var a StopAnswer
	if json.Unmarshal(raw, &a) != nil || !a.StopRequested {
		return nil, invalidResponse("stop", status)
	}
	return &a, nil
}

// stop sends POST {TurnURL}stop and returns the 2xx answer's body.
func (c *Client) stop(ctx context.Context, sessionID, turnID string) ([]byte, int, error) {
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		return nil, 0, ErrInvalidID
	}
	body, _ := json.Marshal(api.StopRequest{SessionID: sessionID, TurnID: turnID}) // two strings: cannot fail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, joinURL(c.opts.TurnURL, api.StopPath), strings.NewReader(string(body)))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.send(req, "stop")
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, 0, cerr
		}
		return nil, 0, networkError("stop", err)
	}
	return raw, resp.StatusCode, nil
}
