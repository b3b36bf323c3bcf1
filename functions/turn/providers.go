package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/bedrock"
	"github.com/turnstream/turnstream/pkg/model/echo"
)

// A provider builds one model provider of cfg.
type provider func(ctx context.Context, cfg config.Config) (model.Model, error)

// providers are the model providers built into this bootstrap, by
// provider name (MODEL_PROVIDER, a definition's provider): echo and
// bedrock always; openai only with the build tag provider.openai
// (provider_openai.go; `make build TURN_PROVIDERS=openai`), because
// github.com/openai/openai-go links about 17 MB into the bootstrap, half
// of it, and 1.3-2.9 ms of package inits into every cold start
// (docs/benchmarks.md, "A lean turn bootstrap").
var providers = map[string]provider{
	config.ProviderEcho: func(_ context.Context, cfg config.Config) (model.Model, error) {
		return echo.New(cfg.Model.EchoDelay, cfg.Model.EchoChunk), nil
	},
	config.ProviderBedrock: func(ctx context.Context, cfg config.Config) (model.Model, error) {
		awsCfg, err := awsenv.Config(cfg.Region)
		if err != nil {
			return nil, fmt.Errorf("bedrock: AWS configuration: %w", err)
		}
		return bedrock.New(bedrockruntime.NewFromConfig(awsCfg)), nil
	},
}

// optionalProviders are the providers a build tag adds (provider.<name>).
var optionalProviders = []string{config.ProviderOpenAI}

// notBuiltIn is the start-up error for a provider this bootstrap lacks:
// for an optional provider, how to build it in.
func notBuiltIn(name string) error {
	for _, p := range optionalProviders {
		if p == name {
			return fmt.Errorf("MODEL_PROVIDER: %q is not built into this turn bootstrap: build it with `make build TURN_PROVIDERS=%s` (go build -tags provider.%s; docs/providers.md)", name, name, name)
		}
	}
	return fmt.Errorf("MODEL_PROVIDER: %q is not wired into the turn function", name)
}
