package secrets_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/turnstream/turnstream/functions/internal/secrets"
	"github.com/turnstream/turnstream/pkg/config"
)

// stored answers GetSecretValue with one secret's value, or err.
type stored struct {
	name  string
	value *string
	err   error
	calls int
}

func (s *stored) SecretString(_ context.Context, id string) (string, error) {
	s.calls++
	if s.err != nil {
		return "", s.err
	}
	if id != s.name {
		return "", errors.New("ResourceNotFoundException")
	}
	if s.value == nil {
		return "", secrets.ErrNoString
	}
	return *s.value, nil
}

func TestInstallAudience(t *testing.T) {
	const name = "stack-page-client"
	tests := map[string]struct {
		secret   *stored
		clientID string // the page's, before
		wantAud  string
		wantPage string
		wantErr  string
	}{
		"the client id":            {secret: &stored{name: name, value: aws.String("4uaj2client")}, wantAud: "4uaj2client", wantPage: "4uaj2client"},
		"spaces trimmed":           {secret: &stored{name: name, value: aws.String(" 4uaj2client\n")}, wantAud: "4uaj2client", wantPage: "4uaj2client"},
		"the page's own client id": {secret: &stored{name: name, value: aws.String("api")}, clientID: "page", wantAud: "api", wantPage: "page"},
		"empty":                    {secret: &stored{name: name, value: aws.String("  ")}, wantErr: "empty or longer"},
		"too long":                 {secret: &stored{name: name, value: aws.String(strings.Repeat("a", 257))}, wantErr: "empty or longer"},
		"binary only":              {secret: &stored{name: name}, wantErr: secrets.ErrNoString.Error()},
		"not found":                {secret: &stored{name: "other", value: aws.String("x")}, wantErr: "JWT_AUDIENCE_SECRET: read the secret"},
		"access denied":            {secret: &stored{err: errors.New("AccessDeniedException")}, wantErr: "JWT_AUDIENCE_SECRET: read the secret"},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			cfg := config.Config{}
			cfg.Auth.AudienceSecret = name
			cfg.Page.ClientID = tc.clientID
			err := secrets.InstallAudience(context.Background(), &cfg, func(context.Context, string) (secrets.Getter, error) { return tc.secret, nil })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				if v := aws.ToString(tc.secret.value); len(strings.TrimSpace(v)) > 2 && strings.Contains(err.Error(), strings.TrimSpace(v)) {
					t.Errorf("the error repeats the secret's value")
				}
				if cfg.Auth.Audience != "" {
					t.Errorf("audience %q set after an error", cfg.Auth.Audience)
				}
				return
			}
			if err != nil || cfg.Auth.Audience != tc.wantAud || cfg.Page.ClientID != tc.wantPage {
				t.Fatalf("audience %q, page client %q, %v; want %q, %q", cfg.Auth.Audience, cfg.Page.ClientID, err, tc.wantAud, tc.wantPage)
			}
		})
	}

	t.Run("no secret named", func(t *testing.T) {
		cfg := config.Config{}
		cfg.Auth.Audience = "given"
		called := false
		err := secrets.InstallAudience(context.Background(), &cfg, func(context.Context, string) (secrets.Getter, error) {
			called = true
			return nil, errors.New("unused")
		})
		if err != nil || called || cfg.Auth.Audience != "given" {
			t.Fatalf("err %v, client made %v, audience %q", err, called, cfg.Auth.Audience)
		}
	})
	t.Run("no client", func(t *testing.T) {
		cfg := config.Config{}
		cfg.Auth.AudienceSecret = name
		err := secrets.InstallAudience(context.Background(), &cfg, func(context.Context, string) (secrets.Getter, error) {
			return nil, errors.New("no credentials")
		})
		if err == nil || !strings.Contains(err.Error(), "secrets manager client") {
			t.Fatalf("err %v", err)
		}
	})
}
