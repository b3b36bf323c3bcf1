package main

import (
	"context"
	"fmt"

	"github.com/turnstream/turnstream/functions/internal/secrets"
	"github.com/turnstream/turnstream/pkg/config"
)

// secretsGetter is the one AWS Secrets Manager call the history function
// makes (functions/internal/secrets).
type secretsGetter = secrets.Getter

// newSecretsClient returns a Secrets Manager client from the function's
// environment (secrets.NewClient).
var newSecretsClient = secrets.NewClient

// errNoSecretString is returned for a secret stored as SecretBinary only.
var errNoSecretString = secrets.ErrNoString

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
	key, err := secrets.String(ctx, c, cfg.CursorSecretARN)
	if err != nil {
		return fmt.Errorf("CURSOR_SECRET_ARN: %w", err)
	}
	return cfg.SetCursorSecret([]byte(key))
}
