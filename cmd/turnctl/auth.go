package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/turnstream/turnstream/pkg/client"
)

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

// errTokenAndSigV4 is returned by authFlags.authenticator when both
// -token and -sigv4 are given: SigV4 uses the Authorization header itself.
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
	_, ok := client.FunctionURLRegion(rawURL)
	return ok
}

// authenticator returns what authenticates requests to rawURL: the bearer
// token, a SigV4 signer (see signs), or nil. Credentials and the region
// are resolved once, here.
func (a *authFlags) authenticator(ctx context.Context, rawURL string) (client.Authenticator, error) {
	if a.token != "" && a.sigv4 {
		return nil, errTokenAndSigV4
	}
	if a.token != "" {
		return client.Bearer(a.token), nil
	}
	if !a.signs(rawURL) {
		return nil, nil
	}
	region := a.region
	if region == "" {
		region, _ = client.FunctionURLRegion(rawURL)
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
	return client.NewSigV4(creds, cfg.Region), nil
}

// urls are the function URLs a subcommand talks to.
type urls struct{ turn, history, artifacts string }

// client returns a client of u whose requests are authenticated as a
// says for the URL of the function each goes to: the turn URL's
// authenticator for all of them (a deployment's function URLs share their
// region and auth mode).
func (a *authFlags) client(ctx context.Context, u urls) (*client.Client, error) {
	first := u.turn
	if first == "" {
		first = u.history
	}
	authn, err := a.authenticator(ctx, first)
	if err != nil {
		return nil, err
	}
	turnURL := u.turn
	if turnURL == "" { // history alone: the client needs a turn URL, never used
		turnURL = u.history
	}
	return client.New(client.Options{TurnURL: turnURL, HistoryURL: u.history, ArtifactsURL: u.artifacts,
		HTTPClient: &http.Client{Transport: baseTransport}, Auth: authn,
		ResumeBackoff: resumeBackoff})
}

// baseTransport is the transport under the client; tests replace it to
// route a function URL host to a local server.
var baseTransport http.RoundTripper = http.DefaultTransport

// resumeBackoff is the first wait before resuming a dropped stream
// (client.Options.ResumeBackoff); tests shorten it.
var resumeBackoff = client.DefaultResumeBackoff

// historyClient checks base (-url: an http(s) URL) and returns the
// client of the history function at base for command cmd ("history",
// "usage"), with a context that Ctrl-C cancels and the function that
// releases it; on a problem it says so on stderr and returns exit status
// 2 and a nil client.
func (a *authFlags) historyClient(cmd, base string, stderr io.Writer) (*client.Client, context.Context, context.CancelFunc, int) {
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		_, _ = fmt.Fprintf(stderr, "turnctl %s: -url is not an http(s) URL\n", cmd)
		return nil, nil, nil, 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	cl, err := a.client(ctx, urls{history: base})
	if err != nil {
		stop()
		_, _ = fmt.Fprintf(stderr, "turnctl %s: %v\n", cmd, err)
		return nil, nil, nil, 2
	}
	return cl, ctx, stop, 0
}
