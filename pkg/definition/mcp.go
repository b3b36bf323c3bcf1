package definition

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Limits of a definition's MCP servers (Definition.MCPServers,
// docs/mcp.md).
const (
	// MaxMCPServers bounds the servers of one definition.
	MaxMCPServers = 8
	// MaxMCPServerNameLen bounds MCPServer.Name: with the "__" separator
	// and a tool name it must fit the model's 64-byte tool names.
	MaxMCPServerNameLen = 24
	// MaxMCPHeaders bounds MCPServer.Headers.
	MaxMCPHeaders = 16
	// MaxMCPHeaderValueBytes bounds a header's literal value or prefix.
	MaxMCPHeaderValueBytes = 4096
	// MaxMCPToolNames bounds allowedTools and a requireApproval list.
	MaxMCPToolNames = 128
	// DefaultMCPTimeout is a call's timeout when timeoutMs is absent; a
	// call also ends with the turn's deadline, whichever comes first.
	DefaultMCPTimeout = 30 * time.Second
	// MaxMCPTimeout bounds timeoutMs (a turn function's own timeout).
	MaxMCPTimeout = 15 * time.Minute
)

// MCPToolSeparator joins a server's name and one of its tools' names in
// the name the model is offered: "<server>__<tool>".
const MCPToolSeparator = "__"

// MCPServer is a remote Model Context Protocol server whose tools a
// definition offers (the file's "mcpServers"; docs/mcp.md), over
// Streamable HTTP.
type MCPServer struct {
	// Name is 1..MaxMCPServerNameLen of [A-Za-z0-9-], starting with a
	// letter or digit, unique in the definition: the model is offered the
	// server's tool t as Name + MCPToolSeparator + t.
	Name string
	// URL is the server's endpoint: https, or http to a loopback host
	// (localhost, 127.0.0.0/8, ::1) for local use; no user information.
	URL string
	// Headers are sent with every request to the server, in order.
	Headers []MCPHeader
	// AllowedTools, when not nil, are the only tools of the server
	// offered (by the server's own names); nil offers every listed tool.
	AllowedTools []string
	// Approval says which of the server's tools wait for the session
	// owner's approval before they run (docs/approvals.md).
	Approval MCPApproval
	// Timeout bounds one call (DefaultMCPTimeout when the file has no
	// timeoutMs; 1 ms..MaxMCPTimeout).
	Timeout time.Duration
}

// MCPHeader is one request header of an MCP server: a literal Value, or
// a Secrets Manager secret (SecretID, a name or ARN) whose string value,
// after Prefix, is the header's value. A secret is read once per process
// (pkg/config) and never logged.
type MCPHeader struct {
	// Name is an HTTP header name; not one the transport sets itself
	// (Accept, Content-Type, Content-Length, Host, Mcp-Session-Id,
	// Mcp-Protocol-Version, Last-Event-Id).
	Name string
	// Value is the literal value (when SecretID is empty).
	Value string
	// SecretID names the secret holding the value.
	SecretID string
	// Prefix precedes the secret's value (for example "Bearer ").
	Prefix string
}

// MCPApproval is a server's "requireApproval": "always" (Always),
// "never" (the zero value), or a list of the server's tool names (Tools).
// The file's default is "always".
type MCPApproval struct {
	Always bool
	Tools  []string
}

// Requires reports whether the server's tool name waits for approval.
func (a MCPApproval) Requires(name string) bool {
	return a.Always || slices.Contains(a.Tools, name)
}

// fileMCPServer is one entry of a definition's "mcpServers".
type fileMCPServer struct {
	Name            *string                   `json:"name"`
	URL             *string                   `json:"url"`
	Headers         map[string]jsontext.Value `json:"headers"`
	AllowedTools    []string                  `json:"allowedTools"`
	RequireApproval jsontext.Value            `json:"requireApproval"`
	TimeoutMs       *int64                    `json:"timeoutMs"`
}

// fileMCPSecret is a header value read from Secrets Manager.
type fileMCPSecret struct {
	SecretID *string `json:"secretId"`
	Prefix   *string `json:"prefix"`
}

// allOf reports whether s is 1..max bytes, each one that ok accepts.
// (Plain loops: a regexp with a bounded repetition compiles into a
// program as long as its bound, at every cold start.)
func allOf(s string, max int, ok func(c byte) bool) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// validServerName: 1..MaxMCPServerNameLen of [A-Za-z0-9-], starting with
// a letter or digit.
func validServerName(s string) bool {
	return allOf(s, MaxMCPServerNameLen, func(c byte) bool { return alnum(c) || c == '-' }) && alnum(s[0])
}

// validToolName is the MCP specification's tool name: 1..128 of
// [A-Za-z0-9_.-].
func validToolName(s string) bool {
	return allOf(s, 128, func(c byte) bool { return alnum(c) || c == '_' || c == '.' || c == '-' })
}

// validHeaderName is an HTTP token (RFC 9110) of at most 128 bytes.
func validHeaderName(s string) bool {
	return allOf(s, 128, func(c byte) bool { return alnum(c) || strings.IndexByte("!#$%&'*+.^_`|~-", c) >= 0 })
}

// mcpReservedHeaders are set by the transport; a definition may not.
var mcpReservedHeaders = map[string]bool{
	"Accept": true, "Content-Type": true, "Content-Length": true, "Host": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
	"Connection": true, "Transfer-Encoding": true,
}

// parseMCPServers decodes a definition's "mcpServers" (field names the
// member for errors). Values are checked by checkMCPServers.
func parseMCPServers(in []fileMCPServer, field func(string) string) ([]MCPServer, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]MCPServer, len(in))
	for i, f := range in {
		at := func(name string) string { return field(fmt.Sprintf("mcpServers[%d].%s", i, name)) }
		if f.Name == nil {
			return nil, fmt.Errorf("%w: %s: required", ErrInvalid, at("name"))
		}
		if f.URL == nil {
			return nil, fmt.Errorf("%w: %s: required", ErrInvalid, at("url"))
		}
		s := MCPServer{Name: *f.Name, URL: *f.URL, AllowedTools: f.AllowedTools, Approval: MCPApproval{Always: true}, Timeout: DefaultMCPTimeout}
		if f.TimeoutMs != nil {
			if *f.TimeoutMs < 1 || *f.TimeoutMs > MaxMCPTimeout.Milliseconds() {
				return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, at("timeoutMs"), MaxMCPTimeout.Milliseconds())
			}
			s.Timeout = time.Duration(*f.TimeoutMs) * time.Millisecond
		}
		if len(f.Headers) > MaxMCPHeaders {
			return nil, fmt.Errorf("%w: %s: at most %d headers", ErrInvalid, at("headers"), MaxMCPHeaders)
		}
		for _, name := range slices.Sorted(maps.Keys(f.Headers)) {
			h, err := parseMCPHeader(name, f.Headers[name])
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, at("headers"), err)
			}
			s.Headers = append(s.Headers, h)
		}
		if len(f.RequireApproval) > 0 && f.RequireApproval.Kind() != 'n' {
			a, err := parseMCPApproval(f.RequireApproval)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, at("requireApproval"), err)
			}
			s.Approval = a
		}
		out[i] = s
	}
	return out, nil
}

// parseMCPHeader decodes one header: a string, or {"secretId", "prefix"?}.
// Errors name the header, never its value.
func parseMCPHeader(name string, v jsontext.Value) (MCPHeader, error) {
	h := MCPHeader{Name: http.CanonicalHeaderKey(name)}
	switch v.Kind() {
	case '"':
		if err := jsonv2.Unmarshal(v, &h.Value); err != nil {
			return h, fmt.Errorf("%s: wrong type or value", name)
		}
	case '{':
		var s fileMCPSecret
		if err := jsonv2.Unmarshal(v, &s, jsonv2.RejectUnknownMembers(true)); err != nil || s.SecretID == nil {
			return h, fmt.Errorf("%s: want a string or {\"secretId\", \"prefix\"?}", name)
		}
		h.SecretID = *s.SecretID
		if s.Prefix != nil {
			h.Prefix = *s.Prefix
		}
	default:
		return h, fmt.Errorf("%s: want a string or {\"secretId\", \"prefix\"?}", name)
	}
	return h, nil
}

// parseMCPApproval decodes "always", "never" or a list of tool names.
func parseMCPApproval(v jsontext.Value) (MCPApproval, error) {
	switch v.Kind() {
	case '"':
		var s string
		if err := jsonv2.Unmarshal(v, &s); err == nil {
			switch s {
			case "always":
				return MCPApproval{Always: true}, nil
			case "never":
				return MCPApproval{}, nil
			}
		}
	case '[':
		var names []string
		if err := jsonv2.Unmarshal(v, &names); err == nil {
			return MCPApproval{Tools: names}, nil
		}
	}
	return MCPApproval{}, errors.New(`want "always", "never" or a list of the server's tool names`)
}

// checkMCPServers checks a definition's MCP servers (see MCPServer).
func checkMCPServers(servers []MCPServer, field func(string) string) error {
	if len(servers) > MaxMCPServers {
		return fmt.Errorf("%w: %s: at most %d servers", ErrInvalid, field("mcpServers"), MaxMCPServers)
	}
	names := map[string]bool{}
	for i, s := range servers {
		at := func(name string) string { return field(fmt.Sprintf("mcpServers[%d].%s", i, name)) }
		if !validServerName(s.Name) {
			return fmt.Errorf("%w: %s: want 1..%d of [A-Za-z0-9-], starting with a letter or digit", ErrInvalid, at("name"), MaxMCPServerNameLen)
		}
		if names[strings.ToLower(s.Name)] {
			return fmt.Errorf("%w: %s: repeats an earlier server", ErrInvalid, at("name"))
		}
		names[strings.ToLower(s.Name)] = true
		if err := checkMCPURL(s.URL); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, at("url"), err)
		}
		if len(s.Headers) > MaxMCPHeaders {
			return fmt.Errorf("%w: %s: at most %d headers", ErrInvalid, at("headers"), MaxMCPHeaders)
		}
		seen := map[string]bool{}
		for _, h := range s.Headers {
			if err := checkMCPHeader(h, seen); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrInvalid, at("headers"), err)
			}
		}
		if err := checkToolNames(s.AllowedTools, nil); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, at("allowedTools"), err)
		}
		if s.AllowedTools != nil && len(s.AllowedTools) == 0 {
			return fmt.Errorf("%w: %s: want at least one tool (omit it to offer every tool)", ErrInvalid, at("allowedTools"))
		}
		if err := checkToolNames(s.Approval.Tools, s.AllowedTools); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, at("requireApproval"), err)
		}
		if s.Timeout < time.Millisecond || s.Timeout > MaxMCPTimeout {
			return fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, at("timeoutMs"), MaxMCPTimeout.Milliseconds())
		}
	}
	return nil
}

// checkMCPURL accepts https, and http to a loopback host.
func checkMCPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("want an absolute https URL")
	}
	if u.User != nil {
		return errors.New("user information is not allowed in the URL (send credentials in headers)")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("a fragment is not allowed in the URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return errors.New("http is only allowed to a loopback host (localhost, 127.0.0.0/8, ::1); use https")
	}
	return errors.New("want an absolute https URL")
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkMCPHeader checks one header (seen: the names so far).
func checkMCPHeader(h MCPHeader, seen map[string]bool) error {
	if !validHeaderName(h.Name) {
		return errors.New("a header name is not an HTTP token")
	}
	name := http.CanonicalHeaderKey(h.Name)
	if mcpReservedHeaders[name] {
		return fmt.Errorf("%s: set by the transport", name)
	}
	if seen[name] {
		return fmt.Errorf("%s: repeats an earlier header", name)
	}
	seen[name] = true
	text := h.Value
	if h.SecretID != "" {
		text = h.Prefix
		if len(h.SecretID) > 2048 || strings.TrimSpace(h.SecretID) != h.SecretID {
			return fmt.Errorf("%s: secretId: want a secret name or ARN", name)
		}
	} else if h.Prefix != "" {
		return fmt.Errorf("%s: prefix needs a secretId", name)
	}
	if len(text) > MaxMCPHeaderValueBytes || strings.ContainsAny(text, "\r\n\x00") {
		return fmt.Errorf("%s: want at most %d bytes on one line", name, MaxMCPHeaderValueBytes)
	}
	return nil
}

// checkToolNames checks a list of MCP tool names: each valid, no
// repeats, and one of within when within is not nil.
func checkToolNames(names, within []string) error {
	if len(names) > MaxMCPToolNames {
		return fmt.Errorf("at most %d tools", MaxMCPToolNames)
	}
	seen := map[string]bool{}
	for j, n := range names {
		if !validToolName(n) {
			return fmt.Errorf("[%d]: want an MCP tool name (1..128 of [A-Za-z0-9_.-])", j)
		}
		if seen[n] {
			return fmt.Errorf("[%d]: repeats an earlier tool", j)
		}
		seen[n] = true
		if within != nil && !slices.Contains(within, n) {
			return fmt.Errorf("[%d]: not one of allowedTools", j)
		}
	}
	return nil
}

// cloneMCPServers returns a deep copy of servers (nil stays nil).
func cloneMCPServers(servers []MCPServer) []MCPServer {
	if servers == nil {
		return nil
	}
	out := make([]MCPServer, len(servers))
	for i, s := range servers {
		s.Headers = slices.Clone(s.Headers)
		s.AllowedTools = slices.Clone(s.AllowedTools)
		s.Approval.Tools = slices.Clone(s.Approval.Tools)
		out[i] = s
	}
	return out
}
