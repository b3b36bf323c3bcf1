package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Test credentials.
const (
	testAccessKey    = "AKIDTURNCTLTEST"
	testSecretKey    = "turnctl-test-secret-key-0123456789"
	testSessionToken = "turnctl-test-session-token"
)

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

// TestSigV4AgainstVerifier: a client with a SigV4 authenticator passes
// a verifier in front of the real handlers, a submit (a body) and a
// history read (none) alike; a body changed after signing is refused,
// with the function URL front end's own message.
func TestSigV4AgainstVerifier(t *testing.T) {
	turnURL, _, _, stop := devServer()
	t.Cleanup(stop)
	verifier := &sigV4Verifier{region: "eu-west-1", next: forward(t, strings.TrimSuffix(turnURL, "turn/"))}
	srv := httptest.NewServer(verifier)
	t.Cleanup(srv.Close)
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, SessionToken: testSessionToken}, nil
	})
	newClient := func(t *testing.T, transport http.RoundTripper) *client.Client {
		c, err := client.New(client.Options{TurnURL: srv.URL + "/turn/", HistoryURL: srv.URL + "/history/",
			Auth: client.NewSigV4(creds, "eu-west-1"), HTTPClient: &http.Client{Transport: transport}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := newClient(t, http.DefaultTransport)
	s, err := c.Submit(t.Context(), client.Submit{SessionID: "s1", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if last, err := s.Drain(); err != nil || last.Snapshot.Status != protocol.StatusComplete {
		t.Fatalf("signed turn: %v", err)
	}
	if _, err := c.Session(t.Context(), "s1"); err != nil {
		t.Fatalf("signed history read: %v", err)
	}
	if n, failures := verifier.counts(); n != 2 || len(failures) != 0 {
		t.Errorf("%d verified, failures %q; want 2, none", n, failures)
	}

	tampered := newClient(t, roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		body = bytes.Replace(body, []byte(`"hello again"`), []byte(`"HELLO again"`), 1)
		r.Body = io.NopCloser(bytes.NewReader(body))
		return http.DefaultTransport.RoundTrip(r)
	}))
	_, err = tampered.Submit(t.Context(), client.Submit{SessionID: "s1", Input: "hello again"})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.FunctionURLMessage != "Forbidden" {
		t.Errorf("tampered body: %v; want 403 with the front end's message", err)
	}
	if _, failures := verifier.counts(); len(failures) != 1 || !strings.Contains(failures[0], "not the body's SHA-256") {
		t.Errorf("failures %q; want one payload hash failure", failures)
	}
}

// TestSigV4VerifierRejects pins that the verifier itself can fail: a wrong
// secret, a changed header and a changed path are refused, an intact
// request passes.
func TestSigV4VerifierRejects(t *testing.T) {
	sign := func(t *testing.T, secret string, body string) *http.Request {
		t.Helper()
		signer := client.NewSigV4(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: secret, SessionToken: testSessionToken}, nil
		}), "us-east-1")
		req, _ := http.NewRequest(http.MethodPost, "http://fn.example/sessions/s1?a=b", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if err := signer.Authenticate(req); err != nil {
			t.Fatal(err)
		}
		sent, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(sent))
		req.Host = req.URL.Host
		return req
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
			region, ok := client.FunctionURLRegion(tc.url)
			if region != tc.region || ok != tc.ok {
				t.Errorf("functionURLRegion(%q) = %q, %v; want %q, %v", tc.url, region, ok, tc.region, tc.ok)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// forward returns a proxy to base (a test server's URL) as the verified
// caller dev.alice, streaming the answer back.
func forward(t *testing.T, base string) http.Handler {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer dev.alice")
		rp.ServeHTTP(w, r)
	})
}
