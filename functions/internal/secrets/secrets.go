// Package secrets reads a function's secrets from AWS Secrets Manager
// once, at start: the history function's cursor key (CURSOR_SECRET_ARN),
// the turn function's OpenAI API key (OPENAI_API_KEY_SECRET_ARN, in a
// bootstrap built with the openai provider), so that neither is in a
// function's environment, where anyone who may read the function's
// configuration reads it too, and every function's JWT audience when
// the stack's Amazon Cognito app client gives it (JWT_AUDIENCE_SECRET,
// InstallAudience, called by functions/internal/startup).
package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/functions/internal/awsapi"
	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/config"
)

// Getter is the one Secrets Manager call a function makes:
// SecretString returns the SecretString of the current version of the
// secret id (an ARN or a name), ErrNoString for a secret stored as
// SecretBinary only. Its errors never hold the secret's value.
type Getter interface {
	SecretString(ctx context.Context, id string) (string, error)
}

// secretsManagerAPI is Secrets Manager's API as awsapi calls it.
var secretsManagerAPI = awsapi.Service{SigningName: "secretsmanager", Host: "secretsmanager",
	EndpointVariable: "AWS_ENDPOINT_URL_SECRETS_MANAGER", Name: "Secrets Manager"}

// attemptTimeout bounds one GetSecretValue attempt (the SDK's standard
// retryer makes up to 3).
const attemptTimeout = 5 * time.Second

// NewClient returns a Secrets Manager client from the function's
// environment (pkg/awsenv: the function role's credentials and region;
// AWS_ENDPOINT_URL_SECRETS_MANAGER, else AWS_ENDPOINT_URL, points it at
// another server). It is one GetSecretValue request
// (POST /, X-Amz-Target secretsmanager.GetSecretValue, awsJson1_1) sent
// by functions/internal/awsapi: the SDK's Secrets Manager client cost
// about 1 ms of package initialisation at every cold start of every
// function, for a call made once at start if at all.
func NewClient(_ context.Context, region string) (Getter, error) {
	awsCfg, err := awsenv.Config(region)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	api, err := awsapi.New(awsCfg, secretsManagerAPI, attemptTimeout)
	if err != nil {
		return nil, err
	}
	return &client{api: api}, nil
}

// client is NewClient's Getter.
type client struct{ api *awsapi.Client }

func (c *client) SecretString(ctx context.Context, id string) (string, error) {
	payload, err := json.Marshal(struct{ SecretId string }{id})
	if err != nil {
		return "", err
	}
	body, err := c.api.Do(ctx, http.MethodPost, "/", map[string]string{
		"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "secretsmanager.GetSecretValue"}, payload)
	if err != nil {
		return "", err
	}
	var out struct{ SecretString *string }
	if err := json.Unmarshal(body, &out); err != nil {
		return "", errors.New("the answer of Secrets Manager is not a GetSecretValue result")
	}
	if out.SecretString == nil {
		return "", ErrNoString
	}
	return *out.SecretString, nil
}

// ErrNoString is String's error for a secret stored as SecretBinary only.
var ErrNoString = errors.New("the secret has no SecretString")

// String returns the SecretString of the current version of the secret
// arn, within ctx (retried inside it). Its errors say what failed, never
// the secret's value.
func String(ctx context.Context, c Getter, arn string) (string, error) {
	v, err := c.SecretString(ctx, arn)
	if errors.Is(err, ErrNoString) {
		return "", ErrNoString
	}
	if err != nil {
		return "", fmt.Errorf("read the secret: %w", err)
	}
	return v, nil
}

// InstallAudience reads the JWT audience from the secret
// cfg.Auth.AudienceSecret (JWT_AUDIENCE_SECRET: its current SecretString,
// spaces trimmed) and sets cfg.Auth.Audience, and the chat page's client
// id when none is set (the stack's Amazon Cognito app client id is both).
// Without a secret it does nothing. client makes the Secrets Manager
// client (NewClient). The error names what failed, never the value.
func InstallAudience(ctx context.Context, cfg *config.Config, client func(context.Context, string) (Getter, error)) error {
	name := cfg.Auth.AudienceSecret
	if name == "" {
		return nil
	}
	c, err := client(ctx, cfg.Region)
	if err != nil {
		return fmt.Errorf("JWT_AUDIENCE_SECRET: secrets manager client: %w", err)
	}
	v, err := String(ctx, c, name)
	if err != nil {
		return fmt.Errorf("JWT_AUDIENCE_SECRET: %w", err)
	}
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 256 {
		return errors.New("JWT_AUDIENCE_SECRET: the secret's string is empty or longer than 256 bytes")
	}
	cfg.Auth.Audience = v
	if cfg.Page.ClientID == "" {
		cfg.Page.ClientID = v
	}
	return nil
}
