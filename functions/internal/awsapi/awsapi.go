// Package awsapi sends the single requests a function makes to an AWS
// service's API (an asynchronous Lambda Invoke, Secrets Manager's
// GetSecretValue) without the SDK's service client: one HTTP request,
// signed with Signature Version 4 (aws/signer/v4), retried by the SDK's
// standard retryer (aws/retry), each attempt bounded. A service client's
// package initialisation (its serialisation schemas and endpoint
// tables) runs at every cold start of a function that links it, called
// or not: Lambda's took 3.4 ms, Secrets Manager's about 1 ms
// (docs/benchmarks.md, "A lean turn bootstrap").
package awsapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Service names one AWS service's API as this package calls it.
type Service struct {
	// SigningName is the service's name in Signature Version 4 scopes
	// ("lambda", "secretsmanager").
	SigningName string
	// Host is the first label of its public endpoint's host ("lambda",
	// "secretsmanager").
	Host string
	// EndpointVariable is the environment variable that points it at
	// another server (AWS_ENDPOINT_URL_LAMBDA,
	// AWS_ENDPOINT_URL_SECRETS_MANAGER).
	EndpointVariable string
	// Name is how errors name it ("Lambda", "Secrets Manager").
	Name string
}

// Client sends signed requests to one service of one region. The
// fields after New's are for tests.
type Client struct {
	service     Service
	Endpoint    string // scheme://host[:port][/path] of the API, no trailing slash
	region      string
	credentials aws.CredentialsProvider
	http        aws.HTTPClient
	// Retryer decides which failures are retried and the wait between
	// attempts (aws/retry's standard retryer: 3 attempts).
	Retryer aws.Retryer
	// AttemptTimeout bounds one attempt, from the request to the whole
	// answer read.
	AttemptTimeout time.Duration
	// Now is the signing time.
	Now func() time.Time
}

// MaxAnswerBytes is the most of an answer's body Do reads (a secret's
// value is at most 64 KiB).
const MaxAnswerBytes = 1 << 20

// New returns the client of service in cfg's region, with cfg's
// credentials, sending through cfg's HTTP client (http.DefaultClient
// when nil), each attempt bounded by attemptTimeout. The endpoint is
// service.EndpointVariable when set, else cfg.BaseEndpoint
// (AWS_ENDPOINT_URL), else the region's public endpoint,
// https://<service.Host>.<region>.amazonaws.com (.amazonaws.com.cn in
// the China regions). It returns an error when the region is empty or an
// endpoint is not an absolute http(s) URL.
func New(cfg aws.Config, service Service, attemptTimeout time.Duration) (*Client, error) {
	if cfg.Region == "" {
		return nil, errors.New("no AWS region")
	}
	endpoint := os.Getenv(service.EndpointVariable)
	if endpoint == "" && cfg.BaseEndpoint != nil {
		endpoint = *cfg.BaseEndpoint
	}
	if endpoint == "" {
		domain := "amazonaws.com"
		if strings.HasPrefix(cfg.Region, "cn-") {
			domain = "amazonaws.com.cn"
		}
		endpoint = "https://" + service.Host + "." + cfg.Region + "." + domain
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the %s endpoint is not an absolute http(s) URL", service.Name)
	}
	var client aws.HTTPClient = http.DefaultClient
	if cfg.HTTPClient != nil {
		client = cfg.HTTPClient
	}
	return &Client{
		service: service, Endpoint: strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"), region: cfg.Region,
		credentials: cfg.Credentials, http: client, Retryer: retry.NewStandard(),
		AttemptTimeout: attemptTimeout, Now: time.Now,
	}, nil
}

// Do sends payload to path (escaped, from the endpoint's root) with
// method and header, and returns the body of a 2xx answer (at most
// MaxAnswerBytes). Another answer is an *Error, after the retries a
// throttle or a server error gets; a connection failure is retried too.
// Other errors are the transport's or the credentials'.
func (c *Client) Do(ctx context.Context, method, path string, header map[string]string, payload []byte) ([]byte, error) {
	sum := sha256.Sum256(payload)
	hash := hex.EncodeToString(sum[:])
	for attempt := 1; ; attempt++ {
		body, err := c.attempt(ctx, method, path, header, payload, hash)
		if err == nil || ctx.Err() != nil || attempt >= c.Retryer.MaxAttempts() || !c.Retryer.IsErrorRetryable(err) {
			return body, err
		}
		if _, terr := c.Retryer.GetRetryToken(ctx, err); terr != nil {
			return nil, err // the retry quota is spent: the service keeps failing
		}
		delay, derr := c.Retryer.RetryDelay(attempt, err)
		if derr != nil {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// attempt sends one signed request under AttemptTimeout.
func (c *Client) attempt(ctx context.Context, method, path string, header map[string]string, payload []byte, hash string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.AttemptTimeout)
	defer cancel()
	creds, err := c.credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Endpoint+path, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, c.service.SigningName, c.region, c.Now()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err // a connection error: retryable (aws/retry)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
	if resp.StatusCode/100 == 2 {
		if err != nil {
			return nil, fmt.Errorf("read the answer: %w", err)
		}
		return body, nil
	}
	return nil, newError(c.service.Name, resp, body)
}

// Error is an answer with an error status: the status and the service's
// error code (X-Amzn-ErrorType, or the body's "__type" or "Type", the
// part after a '#'). It answers aws/retry's questions: HTTPStatusCode
// (500, 502, 503 and 504 are retried) and ErrorCode (the throttles,
// TooManyRequestsException and ThrottlingException among them, are).
type Error struct {
	Service string
	Status  int
	Code    string
	Message string
}

func newError(service string, resp *http.Response, body []byte) *Error {
	e := &Error{Service: service, Status: resp.StatusCode}
	var b struct {
		Type      string `json:"__type"`
		OtherType string `json:"Type"`
		Message   string `json:"message"`
		Capital   string `json:"Message"`
	}
	_ = json.Unmarshal(body, &b)
	e.Code, _, _ = strings.Cut(resp.Header.Get("X-Amzn-ErrorType"), ":")
	for _, t := range []string{b.Type, b.OtherType} {
		if e.Code == "" && t != "" {
			e.Code = t[strings.LastIndex(t, "#")+1:]
		}
	}
	e.Message = b.Message
	if e.Message == "" {
		e.Message = b.Capital
	}
	return e
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s answered %d", e.Service, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// HTTPStatusCode is the answer's status (aws/retry).
func (e *Error) HTTPStatusCode() int { return e.Status }

// ErrorCode is the service's error code (aws/retry).
func (e *Error) ErrorCode() string { return e.Code }
