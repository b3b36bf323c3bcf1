//go:build provider.openai

package main

import (
	"context"
	"fmt"

	"github.com/turnstream/turnstream/functions/internal/secrets"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/openai"
)

// The openai provider, built in with the build tag provider.openai
// (providers.go): the chat completions API at OPENAI_BASE_URL with the
// key of the Secrets Manager secret OPENAI_API_KEY_SECRET_ARN, read once
// here at start (the stack's way: the key never in the environment), or
// else OPENAI_API_KEY.
func init() {
	providers[config.ProviderOpenAI] = func(ctx context.Context, cfg config.Config) (model.Model, error) {
		key, err := openAIKey(ctx, cfg, secrets.NewClient)
		if err != nil {
			return nil, err
		}
		return openai.New(cfg.Model.OpenAIBaseURL, key), nil
	}
}

// openAIKey is the API key of cfg: the SecretString of
// OPENAI_API_KEY_SECRET_ARN's secret through a client of newClient, or
// OPENAI_API_KEY. Errors name the variable and what failed, never the key.
func openAIKey(ctx context.Context, cfg config.Config, newClient func(context.Context, string) (secrets.Getter, error)) (string, error) {
	arn := cfg.Model.OpenAIAPIKeySecretARN
	if arn == "" {
		return cfg.Model.OpenAIAPIKey, nil
	}
	c, err := newClient(ctx, cfg.Region)
	if err != nil {
		return "", fmt.Errorf("OPENAI_API_KEY_SECRET_ARN: secrets manager client: %w", err)
	}
	key, err := secrets.String(ctx, c, arn)
	if err != nil {
		return "", fmt.Errorf("OPENAI_API_KEY_SECRET_ARN: %w", err)
	}
	return key, nil
}
