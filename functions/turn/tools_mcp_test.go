//go:build tools.mcp

package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/turnstream/turnstream/internal/mcptest"
	"github.com/turnstream/turnstream/internal/motoserver"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/tool/mcp"
)

// TestMCPHeaderFromSecretsManager: in a bootstrap with the MCP client,
// a server's header that names a secret is read from Secrets Manager
// (moto_server's) at start, and the server then lists its tools; a
// secret that cannot be read stops the start with an error naming the
// header, never a value.
func TestMCPHeaderFromSecretsManager(t *testing.T) {
	endpoint := motoserver.Start(t)
	sm := secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTURNTEST", "turn-test-secret", "")})
	out, err := sm.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String("turnstream-mcp-calc"), SecretString: aws.String("s3cret-token")})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTURNTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "turn-test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	opts := mcptest.Options{}
	opts.Header.Name, opts.Header.Value = "Authorization", "Bearer s3cret-token"
	srv := mcptest.Start(t, opts)
	cfg, err := config.FromLookup(func(k string) (string, bool) {
		return map[string]string{"AWS_REGION": "us-east-1"}[k], k == "AWS_REGION"
	})
	if err != nil {
		t.Fatal(err)
	}
	sources := func(arn string) (*definition.Resolver, error) {
		defs, err := definition.Parse([]byte(`[{"id": "d", "revision": 1, "provider": "echo", "mcpServers": [{"name": "calc", "url": "` + srv.URL + `",
			"headers": {"Authorization": {"secretId": "` + arn + `", "prefix": "Bearer "}}}]}]`))
		if err != nil {
			return nil, err
		}
		return definition.New(defs, "d", nil)
	}
	defs, err := sources(*out.ARN)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mcpSources(t.Context(), cfg, slog.New(slog.DiscardHandler))(defs)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := got["d"][0].Tools(context.Background())
	if err != nil || !reg.Has("calc__add") {
		t.Fatalf("listing with the secret's header: %v", err)
	}
	absent := strings.Replace(*out.ARN, "turnstream-mcp-calc", "turnstream-absent", 1)
	defs, err = sources(absent)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcpSources(t.Context(), cfg, slog.New(slog.DiscardHandler))(defs)
	if err == nil || !strings.Contains(err.Error(), "header Authorization") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("an unreadable secret: %v", err)
	}
	if errors.Is(err, mcp.ErrDown) {
		t.Fatal("an unreadable secret is a start-up error, not a server down")
	}
}
