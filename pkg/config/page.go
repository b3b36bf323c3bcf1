package config

import (
	"net/url"
	"slices"
	"strings"
)

// PageConfig is the chat page where a function serves it (the history
// function behind the stack's CloudFront distribution; docs/chat-page.md).
// The dev server always serves the page and reads the same variables.
type PageConfig struct {
	// Serve makes the history function serve the chat page's files at
	// "/", "/app.js", "/app.css", "/signin.js", "/syntax.js" and
	// "/config.json" (CHAT_PAGE:
	// on | off, default off). With AUTH_MODE iam it is refused: a browser
	// cannot sign its requests.
	Serve bool
	// Authority is the OpenID Connect issuer the page signs people in with
	// (CHAT_PAGE_OIDC_AUTHORITY: an https URL, or http for a loopback
	// host; its discovery document is Authority +
	// "/.well-known/openid-configuration"). Empty: the page uses dev auth,
	// which only AUTH_MODE dev accepts. Required when Serve is on with
	// AUTH_MODE jwt.
	Authority string
	// ClientID is the page's OAuth client id at Authority
	// (CHAT_PAGE_OIDC_CLIENT_ID); default the JWT audience, as for an
	// Amazon Cognito app client, whose access tokens carry its id.
	ClientID string
	// Scope is what the page asks for (CHAT_PAGE_OIDC_SCOPE, space
	// separated, default "openid email"; must hold openid).
	Scope string
	// LogoutURL is the end-session endpoint of an issuer whose discovery
	// names none (CHAT_PAGE_OIDC_LOGOUT_URL, https): Amazon Cognito's
	// "https://<domain>/logout", sent client_id and logout_uri. Empty: the
	// discovery's end_session_endpoint.
	LogoutURL string
	// ConnectOrigins are origins besides the page's and Authority's that
	// the page may fetch from, for an issuer whose token endpoint lives
	// elsewhere, as Amazon Cognito's domain does (CHAT_PAGE_OIDC_ORIGINS:
	// space-separated https origins, no path). The page's Content Security
	// Policy names them and nothing else.
	ConnectOrigins []string
	// UploadsPath is where the page's origin routes the attachments'
	// storage (CHAT_PAGE_UPLOADS_PATH: a path such as "/uploads/", of
	// letters, digits, '-', '_' and '/', starting and ending with '/'; at
	// most 64 bytes). The page then sends its uploads and reads its
	// downloads there, the storage's path and query kept: behind the
	// stack's CloudFront distribution, whose /uploads/ behaviour reaches
	// the attachments bucket, the page needs no other origin. Empty: the
	// storage's URLs are used as they are (the dev server's /uploads/ is
	// the page's origin already).
	UploadsPath string
}

// DefaultPageScope is CHAT_PAGE_OIDC_SCOPE's default.
const DefaultPageScope = "openid email"

// page parses the CHAT_PAGE variables; auth is the parsed AuthConfig.
func (p *parser) page(a AuthConfig) PageConfig {
	var c PageConfig
	switch v := p.str("CHAT_PAGE", "off"); v {
	case "on":
		c.Serve = true
	case "off":
	default:
		p.fail("CHAT_PAGE", "want on or off")
	}
	c.Authority = strings.TrimSuffix(p.str("CHAT_PAGE_OIDC_AUTHORITY", ""), "/")
	if c.Authority != "" && !validHTTPURL(c.Authority, true) {
		p.fail("CHAT_PAGE_OIDC_AUTHORITY", "not an absolute https URL (http only for a loopback host)")
	}
	c.ClientID = p.str("CHAT_PAGE_OIDC_CLIENT_ID", a.Audience)
	c.Scope = p.str("CHAT_PAGE_OIDC_SCOPE", DefaultPageScope)
	if !slices.Contains(strings.Fields(c.Scope), "openid") {
		p.fail("CHAT_PAGE_OIDC_SCOPE", "must hold openid")
	}
	c.LogoutURL = p.str("CHAT_PAGE_OIDC_LOGOUT_URL", "")
	if c.LogoutURL != "" && !validHTTPURL(c.LogoutURL, true) {
		p.fail("CHAT_PAGE_OIDC_LOGOUT_URL", "not an absolute https URL (http only for a loopback host)")
	}
	for _, o := range strings.Fields(p.str("CHAT_PAGE_OIDC_ORIGINS", "")) {
		if !validOrigin(o) {
			p.fail("CHAT_PAGE_OIDC_ORIGINS", "want space-separated origins (https://host[:port], http only for a loopback host)")
			break
		}
		c.ConnectOrigins = append(c.ConnectOrigins, o)
	}
	c.UploadsPath = p.str("CHAT_PAGE_UPLOADS_PATH", "")
	if c.UploadsPath != "" && !validUploadsPath(c.UploadsPath) {
		p.fail("CHAT_PAGE_UPLOADS_PATH", "want a path such as /uploads/ (letters, digits, '-', '_' and '/', starting and ending with '/', at most 64 bytes)")
	}
	switch {
	case c.Serve && a.Mode == AuthIAM:
		p.fail("CHAT_PAGE", "a browser cannot sign IAM requests: serve the page with AUTH_MODE jwt")
	case c.Authority != "" && a.Mode == AuthDev:
		p.fail("CHAT_PAGE_OIDC_AUTHORITY", "the page would send tokens that AUTH_MODE dev does not read: use AUTH_MODE jwt")
	case c.Serve && a.Mode == AuthJWT && c.Authority == "":
		p.fail("CHAT_PAGE_OIDC_AUTHORITY", "required when CHAT_PAGE is on with AUTH_MODE jwt")
	case c.Authority != "" && c.ClientID == "" && a.AudienceSecret == "":
		p.fail("CHAT_PAGE_OIDC_CLIENT_ID", "required with CHAT_PAGE_OIDC_AUTHORITY when JWT_AUDIENCE is unset")
	}
	return c
}

// validOrigin reports whether s is scheme://host[:port] and nothing more,
// https or http for a loopback host.
func validOrigin(s string) bool {
	u, err := url.Parse(s)
	return err == nil && validHTTPURL(s, true) && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// validUploadsPath reports whether s is "/", or "/" segments of
// [A-Za-z0-9_-] each followed by "/", at most 64 bytes.
func validUploadsPath(s string) bool {
	if len(s) > 64 || !strings.HasPrefix(s, "/") || !strings.HasSuffix(s, "/") {
		return false
	}
	for _, seg := range strings.Split(strings.Trim(s, "/"), "/") {
		if seg == "" && s != "/" {
			return false
		}
		for _, r := range seg {
			if !isPathRune(r) {
				return false
			}
		}
	}
	return true
}

// isPathRune reports whether r is an ASCII letter or digit, '-' or '_'.
func isPathRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}
