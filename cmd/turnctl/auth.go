package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// sigV4Service is the signing name of Lambda function URLs: a request to
// an AuthType AWS_IAM URL is signed for service "lambda" in the URL's
// region.
const sigV4Service = "lambda"

// authFlags are the authentication flags shared by the subcommands that
// call a turnstream function URL: a bearer token (jwt and dev modes) or
// AWS Signature Version 4 (iam mode).
type authFlags struct {
	token  string
	sigv4  bool
	region string
}

// register adds -token, -sigv4 and -region to fs.
func (a *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.token, "token", "", `bearer token sent as "Authorization: Bearer TOKEN" (jwt mode; dev server: dev.<subject>)`)
	fs.BoolVar(&a.sigv4, "sigv4", false, "sign requests with AWS SigV4 (service lambda, the default AWS credential chain); "+
		"automatic for a *.lambda-url.<region>.on.aws URL when -token is not given")
	fs.StringVar(&a.region, "region", "", "SigV4 signing region; default: the region in a function URL's host, else the AWS configuration's")
}

// errTokenAndSigV4 is returned by authFlags.client when both -token and
// -sigv4 are given: SigV4 uses the Authorization header itself.
var errTokenAndSigV4 = errors.New("-token and -sigv4 exclude each other: a SigV4 signature is the Authorization header")

// signs reports whether requests to rawURL are signed with SigV4: -sigv4,
// or a Lambda function URL host without -token.
func (a *authFlags) signs(rawURL string) bool {
	if a.sigv4 {
		return true
	}
	if a.token != "" {
		return false
	}
	_, ok := functionURLRegion(rawURL)
	return ok
}

// client returns the HTTP client for requests to rawURL: one that adds
// the bearer token, signs with SigV4 (see signs), or sends requests as
// they are. Credentials and the region are resolved once, here.
func (a *authFlags) client(ctx context.Context, rawURL string) (*http.Client, error) {
	if a.token != "" && a.sigv4 {
		return nil, errTokenAndSigV4
	}
	base := baseTransport
	if a.token != "" {
		return &http.Client{Transport: &bearerTransport{base: base, token: a.token}}, nil
	}
	if !a.signs(rawURL) {
		return &http.Client{Transport: base}, nil
	}
	region := a.region
	if region == "" {
		region, _ = functionURLRegion(rawURL)
	}
	var loads []func(*awsconfig.LoadOptions) error
	if region != "" {
		loads = append(loads, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration for SigV4: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("SigV4: no region: pass -region, or set AWS_REGION")
	}
	if cfg.Credentials == nil {
		return nil, errors.New("SigV4: no AWS credentials found (environment, shared config, SSO, instance role)")
	}
	// Retrieve once now, so that a missing credential is reported before
	// any request; the cache refreshes expiring ones per request.
	creds := aws.NewCredentialsCache(cfg.Credentials)
	if _, err := creds.Retrieve(ctx); err != nil {
		return nil, fmt.Errorf("SigV4: AWS credentials: %w", err)
	}
	return &http.Client{Transport: &sigV4Transport{
		base: base, credentials: creds, region: cfg.Region, signer: v4.NewSigner(), now: time.Now,
	}}, nil
}

// baseTransport is the transport under the authenticating ones; tests
// replace it to route a function URL host to a local server.
var baseTransport http.RoundTripper = http.DefaultTransport

// functionURLRegion returns the region of a Lambda function URL
// (https://<url-id>.lambda-url.<region>.on.aws/...), and false for any
// other URL.
func functionURLRegion(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	labels := strings.Split(strings.ToLower(u.Hostname()), ".")
	// <url-id> . lambda-url . <region> . on . aws
	if len(labels) != 5 || labels[1] != "lambda-url" || labels[3] != "on" || labels[4] != "aws" || labels[0] == "" || labels[2] == "" {
		return "", false
	}
	return labels[2], true
}

// bearerTransport sets "Authorization: Bearer <token>" on every request.
type bearerTransport struct {
	base  http.RoundTripper
	token string
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// sigV4Transport signs every request with AWS Signature Version 4 for
// service "lambda". Function URLs require the payload's SHA-256 in
// X-Amz-Content-Sha256 (signed with the other headers) for requests with
// a body; it is set on every request. The body is read into memory to be
// hashed.
type sigV4Transport struct {
	base        http.RoundTripper
	credentials aws.CredentialsProvider
	region      string
	signer      *v4.Signer
	now         func() time.Time
}

// emptyPayloadHash is the SHA-256 of no bytes, hex encoded.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func (t *sigV4Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	hash := emptyPayloadHash
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the request body to sign it: %w", err)
		}
		sum := sha256.Sum256(body)
		hash = hex.EncodeToString(sum[:])
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	creds, err := t.credentials.Retrieve(r.Context())
	if err != nil {
		return nil, fmt.Errorf("SigV4: AWS credentials: %w", err)
	}
	r.Header.Set("X-Amz-Content-Sha256", hash)
	if err := t.signer.SignHTTP(r.Context(), creds, r, hash, sigV4Service, t.region, t.now()); err != nil {
		return nil, fmt.Errorf("SigV4: sign the request: %w", err)
	}
	return t.base.RoundTrip(r)
}
