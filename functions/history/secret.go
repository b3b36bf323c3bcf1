package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/config"
)

// secretsGetter is the one AWS Secrets Manager call the history function
// makes; *secretsmanager.Client implements it.
type secretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// newSecretsClient returns a Secrets Manager client from the function's
// environment (pkg/awsenv: the function role's credentials and region;
// AWS_ENDPOINT_URL_SECRETS_MANAGER points it elsewhere).
func newSecretsClient(ctx context.Context, region string) (secretsGetter, error) {
	awsCfg, err := awsenv.Config(region)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return secretsmanager.NewFromConfig(awsCfg), nil
}

// errNoSecretString is returned for a secret stored as SecretBinary only.
var errNoSecretString = errors.New("the secret has no SecretString")

// installCursorSecret reads the cursor key from the Secrets Manager secret
// cfg.CursorSecretARN (its current version's SecretString, taken as bytes)
// and installs it in cfg (config.SetCursorSecret). Without an ARN it does
// nothing: the key is CURSOR_SECRET, or generated (local runs). The error
// names what failed, never the secret's value.
func installCursorSecret(ctx context.Context, cfg *config.Config, client func(context.Context) (secretsGetter, error)) error {
	if cfg.CursorSecretARN == "" {
		return nil
	}
	c, err := client(ctx)
	if err != nil {
		return fmt.Errorf("CURSOR_SECRET_ARN: secrets manager client: %w", err)
	}
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(cfg.CursorSecretARN)})
	if err != nil {
		return fmt.Errorf("CURSOR_SECRET_ARN: read the secret: %w", err)
	}
	if out.SecretString == nil {
		return fmt.Errorf("CURSOR_SECRET_ARN: %w", errNoSecretString)
	}
	return cfg.SetCursorSecret([]byte(*out.SecretString))
}
