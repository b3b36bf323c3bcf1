package devserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/bedrock"
	"github.com/turnstream/turnstream/pkg/model/echo"
)

// credentialsTimeout bounds the start-up look for Bedrock's credentials
// (a shared config file, SSO, the instance metadata service on EC2).
const credentialsTimeout = 10 * time.Second

// openAIModel builds the openai provider: set by models_openai.go, which
// the build tag provider.openai adds (scripts/build-devserver.sh sets it
// when MODEL_PROVIDER or TURN_PROVIDERS names openai), so that a plain
// dev server build does not compile github.com/openai/openai-go, about
// 80 s of one core on a cold build cache.
var openAIModel func(baseURL, apiKey string) model.Model

// ErrOpenAINotBuiltIn is NewHandler's error for the openai provider in a
// dev server built without it.
var ErrOpenAINotBuiltIn = errors.New("MODEL_PROVIDER: \"openai\" is not built into this dev server: start it with `MODEL_PROVIDER=openai make dev`, or build with -tags provider.openai")

// ErrNoCredentials is NewHandler's error when a definition uses a real
// provider whose credentials are missing: Bedrock with no AWS
// credentials in the standard chain, OpenAI's own API with no
// OPENAI_API_KEY. The message says what to set.
var ErrNoCredentials = errors.New("no credentials")

// models builds one model per provider the definitions use, as the
// turn function does (functions/turn), but with the ways to reach a
// provider that a developer's machine has:
//   - echo: ECHO_DELAY and ECHO_CHUNK_RUNES;
//   - bedrock: the AWS SDK's standard chain (environment, shared files
//     and profiles with AWS_PROFILE, SSO, ...) in AWS_REGION, and its
//     endpoint variables (AWS_ENDPOINT_URL_BEDROCK_RUNTIME names another
//     server); the credentials are retrieved once here, so that missing
//     ones fail the start and not the first turn;
//   - openai: OPENAI_BASE_URL (a local OpenAI-compatible server such as
//     Ollama or vLLM, which may need no key) with OPENAI_API_KEY, which
//     OpenAI's own API requires.
//
// A provider a definition names that is not one of these is an error.
func models(ctx context.Context, cfg config.Config, defs *definition.Resolver) (map[string]model.Model, error) {
	out := map[string]model.Model{}
	for _, d := range defs.All() {
		if out[d.Provider] != nil {
			continue
		}
		var m model.Model
		switch d.Provider {
		case config.ProviderEcho:
			m = echo.New(cfg.Model.EchoDelay, cfg.Model.EchoChunk)
		case config.ProviderBedrock:
			var err error
			if m, err = bedrockModel(ctx, cfg.Region); err != nil {
				return nil, err
			}
		case config.ProviderOpenAI:
			if cfg.Model.OpenAIBaseURL == "" && cfg.Model.OpenAIAPIKey == "" {
				return nil, fmt.Errorf("MODEL_PROVIDER=openai: %w: set OPENAI_API_KEY for OpenAI's API, or OPENAI_BASE_URL for a local OpenAI-compatible server", ErrNoCredentials)
			}
			if openAIModel == nil {
				return nil, ErrOpenAINotBuiltIn
			}
			m = openAIModel(cfg.Model.OpenAIBaseURL, cfg.Model.OpenAIAPIKey)
		default:
			return nil, fmt.Errorf("provider %q: the dev server runs echo, bedrock and openai", d.Provider)
		}
		out[d.Provider] = m
	}
	return out, nil
}

// bedrockModel is Bedrock through the standard AWS chain in region,
// checked to have credentials.
func bedrockModel(ctx context.Context, region string) (model.Model, error) {
	ctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("MODEL_PROVIDER=bedrock: AWS configuration: %w", err)
	}
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return nil, fmt.Errorf("MODEL_PROVIDER=bedrock: %w in the AWS SDK's standard chain: set AWS_PROFILE (after `aws sso login` or `aws configure`) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (%v)", ErrNoCredentials, err)
	}
	return bedrock.New(bedrockruntime.NewFromConfig(awsCfg)), nil
}
