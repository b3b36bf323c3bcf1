package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// useTestCredentials points the SDK's default chain at test credentials
// only (no shared files, no instance metadata).
func useTestCredentials(t *testing.T, region string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTURNCTLTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "turnctl-test-secret-key-0123456789")
	t.Setenv("AWS_SESSION_TOKEN", "turnctl-test-session-token")
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// routeTo replaces baseTransport for the test with one that connects every
// request to addr, whatever its host (a function URL host, here).
func routeTo(t *testing.T, addr string) {
	t.Helper()
	saved := baseTransport
	t.Cleanup(func() { baseTransport = saved })
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	baseTransport = tr
}

// credentialScopes records the SigV4 credential scope of each request
// (pkg/client's tests verify the signatures themselves) and answers as a
// function URL front end refusing it, or passes it on as dev.alice.
type credentialScopes struct {
	next   http.Handler
	refuse atomic.Bool

	mu     sync.Mutex
	scopes []string
}

func (c *credentialScopes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	scope := ""
	if _, rest, ok := strings.Cut(authz, "Credential="); ok {
		scope, _, _ = strings.Cut(rest, ",")
	}
	c.mu.Lock()
	c.scopes = append(c.scopes, scope)
	c.mu.Unlock()
	if c.refuse.Load() || scope == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"Message":"Forbidden"}`)
		return
	}
	r.Header.Set("Authorization", "Bearer dev.alice")
	c.next.ServeHTTP(w, r)
}

func (c *credentialScopes) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.scopes) == 0 {
		return ""
	}
	return c.scopes[len(c.scopes)-1]
}

// TestSigV4Flags: a function URL host is signed automatically for its
// region, -sigv4 signs any URL for the configured region, the function
// URL front end's refusal is shown with its message, and a token never
// signs.
func TestSigV4Flags(t *testing.T) {
	useTestCredentials(t, "us-west-2")
	turnURL, historyURL := realServers(t)
	turn := &credentialScopes{next: forwardTo(turnURL)}
	turnSrv := httptest.NewServer(turn)
	t.Cleanup(turnSrv.Close)
	history := &credentialScopes{next: forwardTo(historyURL)}
	historySrv := httptest.NewServer(history)
	t.Cleanup(historySrv.Close)

	t.Run("function URL host signs automatically, region from the host", func(t *testing.T) {
		routeTo(t, turnSrv.Listener.Addr().String())
		code, out, errOut := runTurnctl([]string{"chat", "-url", "http://abcdefghij.lambda-url.eu-west-1.on.aws/", "-session", "s1", "hello"}, "")
		if code != 0 || !strings.Contains(out, "Echo: hello") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if s := turn.last(); !strings.HasSuffix(s, "/eu-west-1/lambda/aws4_request") {
			t.Errorf("credential scope %q, want eu-west-1/lambda", s)
		}
	})

	t.Run("-sigv4 on any URL, region from the environment", func(t *testing.T) {
		code, out, errOut := runTurnctl([]string{"history", "-sigv4", "-url", historySrv.URL + "/", "-session", "s1"}, "")
		if code != 0 || !strings.Contains(out, "Echo: hello") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if s := history.last(); !strings.HasSuffix(s, "/us-west-2/lambda/aws4_request") {
			t.Errorf("credential scope %q, want us-west-2/lambda", s)
		}
	})

	t.Run("the front end's refusal", func(t *testing.T) {
		routeTo(t, turnSrv.Listener.Addr().String())
		turn.refuse.Store(true)
		defer turn.refuse.Store(false)
		code, _, errOut := runTurnctl([]string{"chat", "-url", "http://abcdefghij.lambda-url.eu-west-1.on.aws/", "-session", "s1", "hello again"}, "")
		if code != 1 || !strings.Contains(errOut, "turnctl chat: HTTP 403 Forbidden: Forbidden") {
			t.Errorf("exit %d, stderr %q; want 1 and HTTP 403", code, errOut)
		}
	})

	t.Run("a token never signs", func(t *testing.T) {
		a := authFlags{token: "x"}
		if a.signs("https://abc.lambda-url.us-east-1.on.aws/") {
			t.Error("a function URL with -token is signed")
		}
		if _, err := (&authFlags{token: "x", sigv4: true}).authenticator(context.Background(), "http://127.0.0.1/"); !errors.Is(err, errTokenAndSigV4) {
			t.Errorf("-token with -sigv4: %v", err)
		}
	})
}

// forwardTo returns a proxy to base (a test server's URL), streaming
// the answer back.
func forwardTo(base string) http.Handler {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	return rp
}
