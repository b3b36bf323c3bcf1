package client

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/turnstream/turnstream/pkg/api"
)

// Capabilities is GET {TurnURL}capabilities: what the deployment supports
// (api.Capabilities), with the document as received.
type Capabilities struct {
	api.Capabilities
	// Raw is the whole document as received.
	Raw json.RawMessage `json:"-"`
}

// The objects of Capabilities the client reads.
type (
	// ProtocolVersions is one protocol and the versions served of it.
	ProtocolVersions = api.ProtocolVersions
	// ResumeCapability is the resume route: Method Path, with
	// {sessionId} and {turnId} placeholders, and the query parameter
	// Parameter carrying the last sequence the reader holds.
	ResumeCapability = api.ResumeCapability
	// MultitaskCapability is what a submit may do when its session is
	// busy (Allows; docs/multitask.md); zero from a server without it.
	MultitaskCapability = api.MultitaskCapability
)

// Has reports whether the capabilities list extension ext.
func (c *Capabilities) Has(ext string) bool { return c != nil && slices.Contains(c.Extensions, ext) }

// Resumes reports whether the deployment serves the resume route: the
// extension is listed and the route is available, a GET with both
// placeholders and a parameter.
func (c *Capabilities) Resumes() bool {
	r := c.Resume
	return c.Has(api.ExtensionResume) && r.Available && r.Method == http.MethodGet && r.Parameter != "" &&
		strings.Contains(r.Path, "{sessionId}") && strings.Contains(r.Path, "{turnId}")
}

// Capabilities returns GET {TurnURL}capabilities, fetched once per client
// (a failure is not kept: the next call asks again). A server without the
// route answers a KindHTTP *Error (404 or 405).
func (c *Client) Capabilities(ctx context.Context) (*Capabilities, error) {
	c.mu.Lock()
	caps := c.caps
	c.mu.Unlock()
	if caps != nil {
		return caps, nil
	}
	ctx, cancel := context.WithTimeout(ctx, capabilitiesTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := c.getJSON(ctx, joinURL(c.opts.TurnURL, api.CapabilitiesPath), "capabilities", &raw); err != nil {
		return nil, err
	}
	caps = &Capabilities{}
	if err := json.Unmarshal(raw, caps); err != nil {
		return nil, invalidResponse("capabilities", http.StatusOK)
	}
	caps.Raw = raw
	c.mu.Lock()
	c.caps = caps
	c.mu.Unlock()
	return caps, nil
}

// resumeRouteOf returns the resume route when the deployment offers it
// (ok); ok false when its capabilities say it does not, or refuse the
// route for good (404, 405). err is a failure that may pass: the
// capabilities could not be read (no answer, 408, 429, 5xx), or ctx's.
func (c *Client) resumeRouteOf(ctx context.Context) (route ResumeCapability, ok bool, err error) {
	caps, err := c.Capabilities(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return ResumeCapability{}, false, ctx.Err()
	case err != nil && !refusedForGood(err):
		return ResumeCapability{}, false, err
	case err != nil || !caps.Resumes():
		return ResumeCapability{}, false, nil
	}
	return caps.Resume, true, nil
}

// resumeRoute returns the resume route when the deployment offers it and
// Options.Resume allows it; ok is false otherwise (capabilities that
// cannot be read included). err is only ctx's.
func (c *Client) resumeRoute(ctx context.Context) (route ResumeCapability, ok bool, err error) {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return ResumeCapability{}, false, cerr
		}
		return ResumeCapability{}, false, nil
	}
	if !caps.Resumes() {
		return ResumeCapability{}, false, nil
	}
	return caps.Resume, true, nil
}
