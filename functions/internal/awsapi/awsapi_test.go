package awsapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/turnstream/turnstream/functions/internal/awsapi"
)

var testService = awsapi.Service{SigningName: "secretsmanager", Host: "secretsmanager", EndpointVariable: "AWS_ENDPOINT_URL_AWSAPI_TEST", Name: "Test"}

// newTestClient is a client of srv with static credentials and retries
// without backoff.
func newTestClient(t *testing.T, srv *httptest.Server, attempt time.Duration) *awsapi.Client {
	t.Helper()
	c, err := awsapi.New(aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), HTTPClient: srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}, testService, attempt)
	if err != nil {
		t.Fatal(err)
	}
	c.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
	return c
}

// TestDo: a throttle answered the awsJson way (400, "__type" with a
// namespace) and a 503 are retried, and the third attempt's body is the
// answer; a client error is not retried and comes back as an *Error with
// the code after the '#'; each request is signed for the service and
// region; an attempt that hangs is cut at the attempt timeout and
// retried, 3 attempts in all.
func TestDo(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if !strings.Contains(r.Header.Get("Authorization"), "/eu-west-1/secretsmanager/aws4_request") || r.Header.Get("X-Amz-Target") != "T.Op" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch {
		case string(body) == "hang":
			<-r.Context().Done()
		case string(body) == "missing":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.test#ResourceNotFoundException","message":"not here"}`)
		case n == 1:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.test#ThrottlingException","message":"slow down"}`)
		case n == 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv, 200*time.Millisecond)
	header := map[string]string{"X-Amz-Target": "T.Op"}

	body, err := c.Do(t.Context(), http.MethodPost, "/", header, []byte("get"))
	if err != nil || string(body) != `{"ok":true}` || calls.Load() != 3 {
		t.Fatalf("Do: %q, %v after %d attempts; want the third attempt's answer", body, err, calls.Load())
	}

	calls.Store(10)
	_, err = c.Do(t.Context(), http.MethodPost, "/", header, []byte("missing"))
	var ae *awsapi.Error
	if !errors.As(err, &ae) || ae.Code != "ResourceNotFoundException" || ae.Status != 400 || calls.Load() != 11 ||
		err.Error() != "Test answered 400 ResourceNotFoundException: not here" {
		t.Fatalf("Do of a missing item: %v after %d attempts; want one attempt and its code", err, calls.Load()-10)
	}

	calls.Store(0)
	start := time.Now()
	_, err = c.Do(context.Background(), http.MethodPost, "/", header, []byte("hang"))
	if err == nil || calls.Load() != 3 {
		t.Fatalf("Do of a hung server: %v after %d attempts; want 3 attempts cut", err, calls.Load())
	}
	if took := time.Since(start); took < 3*200*time.Millisecond {
		t.Errorf("3 hung attempts took %v; want each cut at its 200 ms timeout, not before", took)
	}
}

// TestNewEndpoint: the service's own variable wins over AWS_ENDPOINT_URL
// (cfg.BaseEndpoint), which wins over the public endpoint; the China
// regions' domain; no region, or an endpoint that is not an absolute
// http(s) URL, is an error.
func TestNewEndpoint(t *testing.T) {
	cases := []struct {
		name, env, base, region, want string
	}{
		{"public", "", "", "us-east-1", "https://secretsmanager.us-east-1.amazonaws.com"},
		{"china", "", "", "cn-north-1", "https://secretsmanager.cn-north-1.amazonaws.com.cn"},
		{"base", "", "http://127.0.0.1:4566/", "us-east-1", "http://127.0.0.1:4566"},
		{"service variable", "http://127.0.0.1:5000", "http://127.0.0.1:4566", "us-east-1", "http://127.0.0.1:5000"},
		{"no region", "", "", "", "error"},
		{"not a URL", "localhost:5000", "", "us-east-1", "error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(testService.EndpointVariable, tc.env)
			cfg := aws.Config{Region: tc.region}
			if tc.base != "" {
				cfg.BaseEndpoint = aws.String(tc.base)
			}
			c, err := awsapi.New(cfg, testService, time.Second)
			switch {
			case tc.want == "error" && err == nil:
				t.Errorf("endpoint %s, want an error", c.Endpoint)
			case tc.want != "error" && (err != nil || c.Endpoint != tc.want):
				t.Errorf("endpoint %v (%v), want %s", c, err, tc.want)
			}
		})
	}
}
