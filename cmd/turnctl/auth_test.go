package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Test credentials, set through the environment so that turnctl finds them
// with the SDK's default credential chain.
const (
	testAccessKey    = "AKIDTURNCTLTEST"
	testSecretKey    = "turnctl-test-secret-key-0123456789"
	testSessionToken = "turnctl-test-session-token"
)

// useTestCredentials points the SDK's default chain at the test
// credentials only (no shared files, no instance metadata).
func useTestCredentials(t *testing.T, region string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	t.Setenv("AWS_SESSION_TOKEN", testSessionToken)
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// sigV4Verifier checks every request's AWS Signature Version 4 the way a
// function URL with AuthType AWS_IAM does, with the SDK's own signer: it
// rebuilds the canonical request from the signed headers and the body
// received, signs it with the known secret and compares the signatures.
// It answers 403 to a request that fails and passes the others to next.
type sigV4Verifier struct {
	region string
	next   http.Handler

	mu       sync.Mutex
	verified int
	failures []string
}

func (v *sigV4Verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = v.verify(r, body)
	}
	v.mu.Lock()
	if err != nil {
		v.failures = append(v.failures, err.Error())
	} else {
		v.verified++
	}
	v.mu.Unlock()
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"Message":"Forbidden"}`)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	v.next.ServeHTTP(w, r)
}

func (v *sigV4Verifier) verify(r *http.Request, body []byte) error {
	authz := r.Header.Get("Authorization")
	const algorithm = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(authz, algorithm) {
		return errors.New("no SigV4 Authorization header")
	}
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(authz, algorithm), ", ") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("malformed Authorization part %q", part)
		}
		fields[k] = val
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] != testAccessKey || scope[2] != v.region || scope[3] != "lambda" || scope[4] != "aws4_request" {
		return fmt.Errorf("credential scope %q, want %s/<date>/%s/lambda/aws4_request", fields["Credential"], testAccessKey, v.region)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, h := range []string{"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"} {
		if !slices.Contains(signed, h) {
			return fmt.Errorf("header %s is not signed (%s)", h, fields["SignedHeaders"])
		}
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != payloadHash {
		return fmt.Errorf("x-amz-content-sha256 %q is not the body's SHA-256", got)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date: %v", err)
	}
	if d := time.Since(at); d > 15*time.Minute || d < -15*time.Minute {
		return fmt.Errorf("x-amz-date %v is more than 15 minutes away", at)
	}
	if scope[1] != at.Format("20060102") {
		return fmt.Errorf("credential date %s is not the x-amz-date's", scope[1])
	}

	// The canonical request again, from what was received.
	re, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return err
	}
	for _, h := range signed {
		switch h {
		case "host":
		case "content-length":
			re.ContentLength = int64(len(body))
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, SessionToken: testSessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, payloadHash, "lambda", v.region, at); err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(re.Header.Get("Authorization")), []byte(authz)) != 1 {
		return errors.New("signature does not match")
	}
	return nil
}

func (v *sigV4Verifier) counts() (int, []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.verified, slices.Clone(v.failures)
}

// routeTo replaces baseTransport for the test with one that connects every
// request to addr, whatever its host (a function URL host, here).
func routeTo(t *testing.T, addr string, wrap func(http.RoundTripper) http.RoundTripper) {
	t.Helper()
	saved := baseTransport
	t.Cleanup(func() { baseTransport = saved })
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	baseTransport = tr
	if wrap != nil {
		baseTransport = wrap(tr)
	}
}

func TestSigV4AgainstVerifier(t *testing.T) {
	useTestCredentials(t, "us-west-2")
	turnURL, historyURL := realServers(t)
	// The verifier in front of the real handlers: turn and history each
	// behind its own "function URL".
	turnVerifier := &sigV4Verifier{region: "eu-west-1", next: forward(t, turnURL)}
	turnSrv := httptest.NewServer(turnVerifier)
	t.Cleanup(turnSrv.Close)
	historyVerifier := &sigV4Verifier{region: "us-west-2", next: forward(t, historyURL)}
	historySrv := httptest.NewServer(historyVerifier)
	t.Cleanup(historySrv.Close)

	t.Run("function URL host signs automatically, region from the host", func(t *testing.T) {
		routeTo(t, turnSrv.Listener.Addr().String(), nil)
		code, out, errOut := runTurnctl([]string{"chat", "-url", "http://abcdefghij.lambda-url.eu-west-1.on.aws/", "-session", "s1", "hello"}, "")
		if code != 0 || !strings.Contains(out, "Echo: hello") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if n, failures := turnVerifier.counts(); n == 0 || len(failures) != 0 {
			t.Errorf("%d verified, failures %q", n, failures)
		}
	})

	t.Run("-sigv4 on any URL, region from the environment", func(t *testing.T) {
		code, out, errOut := runTurnctl([]string{"history", "-sigv4", "-url", historySrv.URL + "/", "-session", "s1"}, "")
		if code != 0 || !strings.Contains(out, "Echo: hello") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if n, failures := historyVerifier.counts(); n == 0 || len(failures) != 0 {
			t.Errorf("%d verified, failures %q", n, failures)
		}
	})

	t.Run("a body changed after signing is refused", func(t *testing.T) {
		routeTo(t, turnSrv.Listener.Addr().String(), func(base http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				body, _ := io.ReadAll(r.Body)
				body = bytes.Replace(body, []byte(`"hello again"`), []byte(`"HELLO again"`), 1)
				r.Body = io.NopCloser(bytes.NewReader(body))
				return base.RoundTrip(r)
			})
		})
		before, _ := turnVerifier.counts()
		code, _, errOut := runTurnctl([]string{"chat", "-url", "http://abcdefghij.lambda-url.eu-west-1.on.aws/", "-session", "s1", "hello again"}, "")
		if code != 1 || !strings.Contains(errOut, "HTTP 403 Forbidden: Forbidden") {
			t.Errorf("exit %d, stderr %q; want 1 and HTTP 403", code, errOut)
		}
		after, failures := turnVerifier.counts()
		if after != before || len(failures) != 1 || !strings.Contains(failures[0], "not the body's SHA-256") {
			t.Errorf("verified %d -> %d, failures %q; want one payload hash failure", before, after, failures)
		}
	})

	t.Run("a token never signs", func(t *testing.T) {
		a := authFlags{token: "x"}
		if a.signs("https://abc.lambda-url.us-east-1.on.aws/") {
			t.Error("a function URL with -token is signed")
		}
		if _, err := (&authFlags{token: "x", sigv4: true}).client(context.Background(), "http://127.0.0.1/"); !errors.Is(err, errTokenAndSigV4) {
			t.Errorf("-token with -sigv4: %v", err)
		}
	})
}

// TestSigV4VerifierRejects pins that the verifier itself can fail: a wrong
// secret, a changed header and a changed path are refused, an intact
// request passes.
func TestSigV4VerifierRejects(t *testing.T) {
	sign := func(t *testing.T, secret string, body string) *http.Request {
		t.Helper()
		var sent *http.Request
		var sentBody []byte
		tr := &sigV4Transport{
			base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				sent = r
				sentBody, _ = io.ReadAll(r.Body)
				return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
			}),
			credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: secret, SessionToken: testSessionToken}, nil
			}),
			region: "us-east-1", signer: v4.NewSigner(), now: time.Now,
		}
		req, _ := http.NewRequest(http.MethodPost, "http://fn.example/sessions/s1?a=b", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		sent.Body = io.NopCloser(bytes.NewReader(sentBody))
		sent.Host = sent.URL.Host
		return sent
	}
	check := func(r *http.Request) error {
		body, _ := io.ReadAll(r.Body)
		return (&sigV4Verifier{region: "us-east-1"}).verify(r, body)
	}
	if err := check(sign(t, testSecretKey, `{"a":1}`)); err != nil {
		t.Fatalf("intact request refused: %v", err)
	}
	if err := check(sign(t, testSecretKey, "")); err != nil {
		t.Fatalf("intact empty request refused: %v", err)
	}
	if err := check(sign(t, "another-secret", `{"a":1}`)); err == nil {
		t.Error("a request signed with another secret passes")
	}
	r := sign(t, testSecretKey, `{"a":1}`)
	r.Header.Set("Content-Type", "text/plain")
	if err := check(r); err == nil {
		t.Error("a changed signed header passes")
	}
	r = sign(t, testSecretKey, `{"a":1}`)
	r.URL.Path = "/sessions/s2"
	if err := check(r); err == nil {
		t.Error("a changed path passes")
	}
}

func TestFunctionURLRegion(t *testing.T) {
	tests := map[string]struct {
		url    string
		region string
		ok     bool
	}{
		"function URL":       {"https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws/", "us-east-1", true},
		"with path":          {"https://abc.lambda-url.ap-southeast-2.on.aws/sessions/s1", "ap-southeast-2", true},
		"upper case":         {"https://ABC.LAMBDA-URL.EU-WEST-1.ON.AWS/", "eu-west-1", true},
		"dev server":         {"http://127.0.0.1:8787/turn/", "", false},
		"lookalike suffix":   {"https://abc.lambda-url.us-east-1.on.aws.example.com/", "", false},
		"API Gateway":        {"https://abc.execute-api.us-east-1.amazonaws.com/", "", false},
		"missing id":         {"https://lambda-url.us-east-1.on.aws/", "", false},
		"not a URL":          {"://", "", false},
		"empty region label": {"https://abc.lambda-url..on.aws/", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			region, ok := functionURLRegion(tc.url)
			if region != tc.region || ok != tc.ok {
				t.Errorf("functionURLRegion(%q) = %q, %v; want %q, %v", tc.url, region, ok, tc.region, tc.ok)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// forward returns a handler that sends each request on to base (a test
// server's URL ending in "/"), streaming the answer back.
func forward(t *testing.T, base string) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimSuffix(base, "/")+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.Header.Set("Authorization", "Bearer dev.alice") // the verified caller
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	})
}
