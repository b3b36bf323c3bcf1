//go:build provider.openai

package main

import (
	"context"

	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/openai"
)

// The openai provider, built in with the build tag provider.openai
// (providers.go): the chat completions API at OPENAI_BASE_URL with
// OPENAI_API_KEY.
func init() {
	providers[config.ProviderOpenAI] = func(_ context.Context, cfg config.Config) (model.Model, error) {
		return openai.New(cfg.Model.OpenAIBaseURL, cfg.Model.OpenAIAPIKey), nil
	}
}
