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
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/config"
)

// Getter is the one Secrets Manager call a function makes;
// *secretsmanager.Client implements it.
type Getter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// NewClient returns a Secrets Manager client from the function's
// environment (pkg/awsenv: the function role's credentials and region;
// AWS_ENDPOINT_URL_SECRETS_MANAGER points it at another server).
func NewClient(_ context.Context, region string) (Getter, error) {
	awsCfg, err := awsenv.Config(region)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return secretsmanager.NewFromConfig(awsCfg), nil
}

// ErrNoString is String's error for a secret stored as SecretBinary only.
var ErrNoString = errors.New("the secret has no SecretString")

// String returns the SecretString of the current version of the secret
// arn, within ctx (the SDK retries inside it). Its errors say what
// failed, never the secret's value.
func String(ctx context.Context, c Getter, arn string) (string, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("read the secret: %w", err)
	}
	if out.SecretString == nil {
		return "", ErrNoString
	}
	return *out.SecretString, nil
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
