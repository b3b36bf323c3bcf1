// Package secrets reads a function's secrets from AWS Secrets Manager
// once, at start: the history function's cursor key (CURSOR_SECRET_ARN)
// and the turn function's OpenAI API key (OPENAI_API_KEY_SECRET_ARN, in
// a bootstrap built with the openai provider), so that neither is in a
// function's environment, where anyone who may read the function's
// configuration reads it too. Only those two import it: the default turn
// bootstrap does not link the Secrets Manager client.
package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/turnstream/turnstream/pkg/awsenv"
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
