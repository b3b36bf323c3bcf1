package main

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

// eventInvoker starts asynchronous invocations of a Lambda function
// (InvocationType Event) with the one request of Lambda's Invoke API that
// this needs,
//
//	POST /2015-03-31/functions/{FunctionName}/invocations
//	X-Amz-Invocation-Type: Event
//
// signed with Signature Version 4 (aws/signer/v4) for the service
// "lambda", and answered 202 when Lambda has queued the event. It stands
// in for the Lambda service client, whose package initialisation (its
// serialisation schemas) took 3.4 ms of every cold start of the turn
// function, queued turns or not (docs/benchmarks.md, "A lean turn
// bootstrap").
//
// Each attempt is bounded by attemptTimeout; a throttle (429), a server
// error (500, 502, 503, 504) or a connection failure is retried as the
// SDK retries its own calls (aws/retry's standard retryer: 3 attempts,
// jittered backoff); any other answer is an error at once.
type eventInvoker struct {
	endpoint       string // scheme://host[:port] of the Lambda API
	region         string
	credentials    aws.CredentialsProvider
	client         aws.HTTPClient
	retryer        aws.Retryer
	attemptTimeout time.Duration
	now            func() time.Time // the signing time
}

// defaultInvokeAttemptTimeout bounds one Invoke attempt: an asynchronous
// Invoke only queues the event, and the dispatch that sends it has 10 s.
const defaultInvokeAttemptTimeout = 3 * time.Second

// newEventInvoker returns the invoker of cfg's region and credentials,
// sending through cfg's HTTP client. The endpoint is
// AWS_ENDPOINT_URL_LAMBDA when set, else cfg.BaseEndpoint
// (AWS_ENDPOINT_URL), else the region's public endpoint,
// https://lambda.<region>.amazonaws.com (.amazonaws.com.cn in the China
// regions). It returns an error when the region is empty or an endpoint
// is not an absolute http(s) URL.
func newEventInvoker(cfg aws.Config) (*eventInvoker, error) {
	if cfg.Region == "" {
		return nil, errors.New("no AWS region")
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_LAMBDA")
	if endpoint == "" && cfg.BaseEndpoint != nil {
		endpoint = *cfg.BaseEndpoint
	}
	if endpoint == "" {
		domain := "amazonaws.com"
		if strings.HasPrefix(cfg.Region, "cn-") {
			domain = "amazonaws.com.cn"
		}
		endpoint = "https://lambda." + cfg.Region + "." + domain
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("the Lambda endpoint is not an absolute http(s) URL")
	}
	var client aws.HTTPClient = http.DefaultClient
	if cfg.HTTPClient != nil {
		client = cfg.HTTPClient
	}
	return &eventInvoker{
		endpoint: strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"), region: cfg.Region,
		credentials: cfg.Credentials, client: client, retryer: retry.NewStandard(),
		attemptTimeout: defaultInvokeAttemptTimeout, now: time.Now,
	}, nil
}

// invokeEvent queues payload as an asynchronous invocation of function
// (a name, an ARN or a partial ARN). It returns nil once Lambda accepted
// it (2xx), an *invokeError for any other answer (after the retries a
// throttle or a server error gets), or the transport's or the
// credentials' error.
func (i *eventInvoker) invokeEvent(ctx context.Context, function string, payload []byte) error {
	sum := sha256.Sum256(payload)
	hash := hex.EncodeToString(sum[:])
	for attempt := 1; ; attempt++ {
		err := i.attempt(ctx, function, payload, hash)
		if err == nil || ctx.Err() != nil || attempt >= i.retryer.MaxAttempts() || !i.retryer.IsErrorRetryable(err) {
			return err
		}
		if _, terr := i.retryer.GetRetryToken(ctx, err); terr != nil {
			return err // the retry quota is spent: Lambda keeps failing
		}
		delay, derr := i.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// attempt sends one signed Invoke request under attemptTimeout.
func (i *eventInvoker) attempt(ctx context.Context, function string, payload []byte, hash string) error {
	ctx, cancel := context.WithTimeout(ctx, i.attemptTimeout)
	defer cancel()
	creds, err := i.credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	target := i.endpoint + "/2015-03-31/functions/" + url.PathEscape(function) + "/invocations"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Invocation-Type", "Event")
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, "lambda", i.region, i.now()); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	resp, err := i.client.Do(req)
	if err != nil {
		return err // a connection error: retryable (aws/retry)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return newInvokeError(resp, body)
}

// invokeError is an Invoke answered with an error status: the status and
// Lambda's error code (X-Amzn-ErrorType, or the body's "Type"). It
// answers aws/retry's questions: HTTPStatusCode (500, 502, 503 and 504
// are retried) and ErrorCode (TooManyRequestsException and the other
// throttles are).
type invokeError struct {
	status  int
	code    string
	message string
}

func newInvokeError(resp *http.Response, body []byte) *invokeError {
	e := &invokeError{status: resp.StatusCode}
	var b struct {
		Type    string `json:"Type"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &b)
	e.code, _, _ = strings.Cut(resp.Header.Get("X-Amzn-ErrorType"), ":")
	if e.code == "" {
		e.code = b.Type
	}
	e.message = b.Message
	return e
}

func (e *invokeError) Error() string {
	s := fmt.Sprintf("Lambda answered %d", e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}

// HTTPStatusCode is the answer's status (aws/retry).
func (e *invokeError) HTTPStatusCode() int { return e.status }

// ErrorCode is Lambda's error code (aws/retry).
func (e *invokeError) ErrorCode() string { return e.code }
