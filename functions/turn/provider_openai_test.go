//go:build provider.openai

package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/turnstream/turnstream/functions/internal/secrets"
	"github.com/turnstream/turnstream/internal/motoserver"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/modeltest"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestOpenAIKeyFromSecretsManager: with OPENAI_API_KEY_SECRET_ARN the
// turn function reads the key from Secrets Manager (moto_server's) at
// start and the provider sends it; a secret that is missing or binary is
// an error naming the variable, never a key.
func TestOpenAIKeyFromSecretsManager(t *testing.T) {
	endpoint := motoserver.Start(t)
	sm := secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTURNTEST", "turn-test-secret", "")})
	ctx := t.Context()
	create := func(name string, in *secretsmanager.CreateSecretInput) string {
		in.Name = aws.String(name)
		out, err := sm.CreateSecret(ctx, in)
		if err != nil {
			t.Fatalf("create secret %s: %v", name, err)
		}
		return *out.ARN
	}
	keyARN := create("turnstream-openai", &secretsmanager.CreateSecretInput{SecretString: aws.String(modeltest.OpenAIKey)})
	binaryARN := create("turnstream-openai-binary", &secretsmanager.CreateSecretInput{SecretBinary: []byte{1, 2, 3}})
	missingARN := strings.Replace(keyARN, "turnstream-openai", "turnstream-absent", 1)

	// The function's own client, from its environment (pkg/awsenv).
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTURNTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "turn-test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")

	cfgOf := func(arn string) config.Config {
		env := map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": modeltest.OpenAIModelID, "AWS_REGION": "us-east-1", "OPENAI_API_KEY_SECRET_ARN": arn}
		cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	t.Run("the provider sends the secret's key", func(t *testing.T) {
		fake := modeltest.NewOpenAI(t, modeltest.Reply{Text: "keyed"})
		cfg := cfgOf(keyARN)
		cfg.Model.OpenAIBaseURL = fake.BaseURL()
		m, err := providers[config.ProviderOpenAI](ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.Stream(ctx, model.Request{ModelID: modeltest.OpenAIModelID,
			Messages: []protocol.Message{{ID: "u1", Role: protocol.RoleUser, Content: "hello"}}})
		if err != nil {
			t.Fatalf("stream: %v (the fake wants the key from the secret)", err)
		}
		defer s.Close()
		if len(fake.Requests()) != 1 {
			t.Errorf("%d requests, want 1", len(fake.Requests()))
		}
	})
	for name, tc := range map[string]struct {
		arn  string
		want error
	}{
		"missing": {missingARN, nil},
		"binary":  {binaryARN, secrets.ErrNoString},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openAIKey(ctx, cfgOf(tc.arn), secrets.NewClient)
			if err == nil || !strings.HasPrefix(err.Error(), "OPENAI_API_KEY_SECRET_ARN: ") || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("openAIKey: %v, want an OPENAI_API_KEY_SECRET_ARN error (%v)", err, tc.want)
			}
			if strings.Contains(err.Error(), modeltest.OpenAIKey) {
				t.Errorf("the error holds the key: %v", err)
			}
		})
	}
	t.Run("without a secret, OPENAI_API_KEY", func(t *testing.T) {
		cfg := cfgOf("")
		cfg.Model.OpenAIAPIKey = "sk-from-env"
		key, err := openAIKey(ctx, cfg, func(context.Context, string) (secrets.Getter, error) {
			t.Fatal("a client was made without a secret")
			return nil, nil
		})
		if err != nil || key != "sk-from-env" {
			t.Fatalf("openAIKey: %q, %v", key, err)
		}
	})
}
