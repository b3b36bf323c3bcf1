package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/pkg/config"
)

const testSecretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:turnstream-cursor-AbCdEf"

// fakeSecretsManager speaks the part of the Secrets Manager JSON API
// (awsJson1_1) that the history function uses: GetSecretValue, answering
// secrets by ARN and ResourceNotFoundException otherwise. It records the
// requests' signing scopes.
type fakeSecretsManager struct {
	secrets map[string]map[string]any // ARN -> response members

	mu     sync.Mutex
	scopes []string
	calls  int
}

func (f *fakeSecretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	if i := strings.Index(r.Header.Get("Authorization"), "Credential="); i >= 0 {
		f.scopes = append(f.scopes, strings.SplitN(r.Header.Get("Authorization")[i+len("Credential="):], ",", 2)[0])
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.1") {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"InvalidRequestException","message":"unexpected request"}`)
		return
	}
	var in struct{ SecretId string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"InvalidRequestException","message":"bad JSON"}`)
		return
	}
	out, ok := f.secrets[in.SecretId]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// useFakeSecretsManager points the SDK's default configuration at f, with
// static test credentials and nothing from the machine's AWS files.
func useFakeSecretsManager(t *testing.T, f *fakeSecretsManager) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDHISTORYTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "history-test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func secretConfig(t *testing.T, arn string) config.Config {
	t.Helper()
	env := map[string]string{"AUTH_MODE": "dev", "AWS_REGION": "eu-west-1", "AWS_LAMBDA_FUNCTION_NAME": "history", "CURSOR_SECRET_ARN": arn}
	cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func realSecretsClient(ctx context.Context) (secretsGetter, error) {
	return newSecretsClient(ctx, "eu-west-1")
}

// TestInstallCursorSecret reads the key through the real SDK client from a
// local server speaking the Secrets Manager JSON API.
func TestInstallCursorSecret(t *testing.T) {
	const key = "cursor-key-from-secrets-manager-0123456789"
	f := &fakeSecretsManager{secrets: map[string]map[string]any{
		testSecretARN:             {"ARN": testSecretARN, "Name": "turnstream-cursor", "SecretString": key, "VersionId": "v1"},
		testSecretARN + "-short":  {"ARN": testSecretARN + "-short", "SecretString": "fifteen-bytes.."},
		testSecretARN + "-binary": {"ARN": testSecretARN + "-binary", "SecretBinary": "AAECAwQFBgcICQoLDA0ODxAREhM="},
	}}
	useFakeSecretsManager(t, f)

	cfg := secretConfig(t, testSecretARN)
	if err := installCursorSecret(t.Context(), &cfg, realSecretsClient); err != nil {
		t.Fatal(err)
	}
	if string(cfg.CursorSecret) != key || cfg.CursorSecretGenerated {
		t.Errorf("cursor secret %q generated %v, want the secret's SecretString", cfg.CursorSecret, cfg.CursorSecretGenerated)
	}
	if err := cfg.RequireCursorSecret(); err != nil {
		t.Errorf("RequireCursorSecret: %v", err)
	}
	f.mu.Lock()
	scopes := f.scopes
	f.mu.Unlock()
	if len(scopes) != 1 || !strings.HasSuffix(scopes[0], "/eu-west-1/secretsmanager/aws4_request") {
		t.Errorf("signing scopes %q, want one request signed for secretsmanager in eu-west-1", scopes)
	}

	failures := map[string]struct {
		arn     string
		wantErr string
		is      error
	}{
		"missing secret": {testSecretARN + "-gone", "ResourceNotFoundException", nil},
		"short secret":   {testSecretARN + "-short", "", config.ErrCursorSecretShort},
		"binary secret":  {testSecretARN + "-binary", "", errNoSecretString},
	}
	for name, tc := range failures {
		t.Run(name, func(t *testing.T) {
			cfg := secretConfig(t, tc.arn)
			err := installCursorSecret(t.Context(), &cfg, realSecretsClient)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.wantErr) ||
				!strings.HasPrefix(err.Error(), "CURSOR_SECRET_ARN: ") {
				t.Fatalf("error %v, want CURSOR_SECRET_ARN: ... %s %v", err, tc.wantErr, tc.is)
			}
			if strings.Contains(err.Error(), "fifteen-bytes") {
				t.Errorf("error %q repeats the secret", err)
			}
			if !cfg.CursorSecretGenerated || cfg.RequireCursorSecret() == nil {
				t.Error("a failed read left a usable key installed")
			}
		})
	}

	t.Run("no ARN: no call", func(t *testing.T) {
		cfg := secretConfig(t, "")
		f.mu.Lock()
		before := f.calls
		f.mu.Unlock()
		if err := installCursorSecret(t.Context(), &cfg, realSecretsClient); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.calls != before {
			t.Errorf("%d calls to Secrets Manager without CURSOR_SECRET_ARN", f.calls-before)
		}
	})
}

// BenchmarkColdStartCursorSecret measures what reading the cursor key from
// Secrets Manager adds to a cold start, against a local server (network
// latency to the real service is not included): loading the AWS
// configuration, building the client and one signed GetSecretValue. The
// baseline, CursorSecretFromEnvironment, is parsing the configuration with
// CURSOR_SECRET set, which every cold start pays anyway.
func BenchmarkColdStartCursorSecret(b *testing.B) {
	f := &fakeSecretsManager{secrets: map[string]map[string]any{
		testSecretARN: {"ARN": testSecretARN, "SecretString": "cursor-key-from-secrets-manager-0123456789"},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	b.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	b.Setenv("AWS_ACCESS_KEY_ID", "AKIDHISTORYTEST")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "history-test-secret")
	dir := b.TempDir()
	b.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	envWith := func(extra map[string]string) func(string) (string, bool) {
		env := map[string]string{"AUTH_MODE": "dev", "AWS_REGION": "eu-west-1"}
		for k, v := range extra {
			env[k] = v
		}
		return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	b.Run("CursorSecretFromEnvironment", func(b *testing.B) {
		b.ReportAllocs()
		lookup := envWith(map[string]string{"CURSOR_SECRET": "cursor-key-from-the-environment-0123456789"})
		for b.Loop() {
			if _, err := config.FromLookup(lookup); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CursorSecretFromSecretsManager", func(b *testing.B) {
		b.ReportAllocs()
		lookup := envWith(map[string]string{"CURSOR_SECRET_ARN": testSecretARN})
		for b.Loop() {
			cfg, err := config.FromLookup(lookup)
			if err != nil {
				b.Fatal(err)
			}
			if err := installCursorSecret(context.Background(), &cfg, realSecretsClient); err != nil {
				b.Fatal(err)
			}
		}
	})
}
