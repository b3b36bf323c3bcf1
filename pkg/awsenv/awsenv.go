// Package awsenv builds the AWS SDK configuration of a Lambda function
// from the environment the Lambda runtime gives it, in place of the
// SDK's shared-configuration loader (aws-sdk-go-v2/config).
//
// That loader resolves profiles, SSO, sign-in, assume-role and process
// credentials from ~/.aws files, so it links the SSO, SSO OIDC, STS and
// sign-in clients, whose package initialisation runs in every cold start
// of a binary that imports it (docs/benchmarks.md, "A lean turn
// bootstrap"). A function has none of those sources: the runtime sets
// the role's credentials and the region as environment variables. Tools
// that do use profiles (turnctl) keep the loader.
//
// What Config reads, all optional:
//
//   - the region: AWS_REGION, else AWS_DEFAULT_REGION;
//   - the credentials (Credentials): AWS_ACCESS_KEY_ID,
//     AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, which the Lambda
//     runtime sets; else a container credentials endpoint
//     (AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI, with
//     AWS_CONTAINER_AUTHORIZATION_TOKEN or _TOKEN_FILE);
//   - endpoints: AWS_ENDPOINT_URL for every service, and
//     AWS_ENDPOINT_URL_<SERVICE> for one (its SDK id in capitals, spaces
//     as underscores: AWS_ENDPOINT_URL_DYNAMODB,
//     AWS_ENDPOINT_URL_SECRETS_MANAGER), as the SDK's clients read them;
//   - AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT (true/false).
package awsenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
)

// ErrNoCredentials is what the provider Credentials returns answers with
// when the environment holds neither keys nor a container endpoint.
var ErrNoCredentials = errors.New("awsenv: no AWS credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_CONTAINER_CREDENTIALS_FULL_URI)")

// Config returns the SDK configuration of the environment for region
// (empty: AWS_REGION, else AWS_DEFAULT_REGION; the clients refuse to
// call without one). Its HTTP client and retryer are the SDK's defaults;
// callers set their own on it or on a client's options. The error is
// about the environment's values (an unusable endpoint, a bad boolean),
// never a missing credential, which the first call reports.
func Config(region string) (aws.Config, error) {
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	src := environment{}
	if _, _, err := src.GetUseFIPSEndpoint(context.Background()); err != nil {
		return aws.Config{}, err
	}
	if _, _, err := src.GetUseDualStackEndpoint(context.Background()); err != nil {
		return aws.Config{}, err
	}
	creds, err := Credentials()
	if err != nil {
		return aws.Config{}, err
	}
	cfg := aws.Config{Region: region, Credentials: creds, ConfigSources: []any{src}}
	if u := os.Getenv("AWS_ENDPOINT_URL"); u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg, nil
}

// Credentials returns the credentials of the environment: its keys as
// they are now (the Lambda runtime sets them once per execution
// environment), else the container endpoint's, cached until they
// expire, else a provider that answers ErrNoCredentials. The error is for
// a container endpoint that is neither HTTPS nor on a loopback or the
// ECS and EKS link-local addresses.
func Credentials() (aws.CredentialsProvider, error) {
	if id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		return credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")), nil
	}
	endpoint := os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	if rel := os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		endpoint = "http://169.254.170.2" + rel
	} else if endpoint != "" {
		if err := checkContainerEndpoint(endpoint); err != nil {
			return nil, err
		}
	}
	if endpoint == "" {
		return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, ErrNoCredentials
		}), nil
	}
	p := endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		o.AuthorizationToken = os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
		if file := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); file != "" {
			o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				b, err := os.ReadFile(file)
				if err != nil {
					return "", fmt.Errorf("awsenv: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: %w", err)
				}
				return strings.TrimSpace(string(b)), nil
			})
		}
	})
	return aws.NewCredentialsCache(p), nil
}

// checkContainerEndpoint accepts a full container credentials URI that
// is HTTPS, or HTTP to a loopback address or to the ECS (169.254.170.2)
// or EKS (169.254.170.23, fd00:ec2::23) credentials address, as the
// SDK's loader does.
func checkContainerEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("awsenv: AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL")
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.Equal(net.ParseIP("169.254.170.2")) ||
		ip.Equal(net.ParseIP("169.254.170.23")) || ip.Equal(net.ParseIP("fd00:ec2::23"))) {
		return nil
	}
	return errors.New("awsenv: AWS_CONTAINER_CREDENTIALS_FULL_URI must be HTTPS, or HTTP to a loopback address or the ECS or EKS credentials address")
}

// environment is the configuration source the SDK's clients consult
// (aws.Config.ConfigSources) for a service's endpoint and the FIPS and
// dual-stack choices.
type environment struct{}

// GetServiceBaseEndpoint returns AWS_ENDPOINT_URL_<sdkID in capitals,
// spaces as underscores>.
func (environment) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := os.Getenv("AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return v, v != "", nil
}

// GetUseFIPSEndpoint reads AWS_USE_FIPS_ENDPOINT.
func (environment) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	on, found, err := boolean("AWS_USE_FIPS_ENDPOINT")
	switch {
	case err != nil || !found:
		return aws.FIPSEndpointStateUnset, false, err
	case on:
		return aws.FIPSEndpointStateEnabled, true, nil
	}
	return aws.FIPSEndpointStateDisabled, true, nil
}

// GetUseDualStackEndpoint reads AWS_USE_DUALSTACK_ENDPOINT.
func (environment) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	on, found, err := boolean("AWS_USE_DUALSTACK_ENDPOINT")
	switch {
	case err != nil || !found:
		return aws.DualStackEndpointStateUnset, false, err
	case on:
		return aws.DualStackEndpointStateEnabled, true, nil
	}
	return aws.DualStackEndpointStateDisabled, true, nil
}

// boolean reads the environment variable name as true or false (any
// case); unset or empty is not found.
func boolean(name string) (on, found bool, err error) {
	switch v := os.Getenv(name); strings.ToLower(v) {
	case "":
		return false, false, nil
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, fmt.Errorf("awsenv: %s must be true or false", name)
}
