package config_test

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
)

// env returns a lookup over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// recordingEnv returns a lookup over m that records every name read.
func recordingEnv(m map[string]string, read map[string]bool) func(string) (string, bool) {
	return func(k string) (string, bool) {
		read[k] = true
		v, ok := m[k]
		return v, ok
	}
}

func mustParse(t *testing.T, m map[string]string) config.Config {
	t.Helper()
	c, err := config.FromLookup(env(m))
	if err != nil {
		t.Fatalf("FromLookup: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, nil)
	checks := map[string]struct{ got, want any }{
		"TableName":          {c.TableName, "turnstream"},
		"DynamoDBEndpoint":   {c.DynamoDBEndpoint, ""},
		"Region":             {c.Region, ""},
		"TurnTimeout":        {c.TurnTimeout, 5 * time.Minute},
		"CleanupReserve":     {c.CleanupReserve, 5 * time.Second},
		"LeaseDuration":      {c.LeaseDuration, 30 * time.Second},
		"SnapshotInterval":   {c.SnapshotInterval, 50 * time.Millisecond},
		"MaxBodyBytes":       {c.MaxBodyBytes, int64(65536)},
		"CursorSecretLen":    {len(c.CursorSecret), 32},
		"CursorGenerated":    {c.CursorSecretGenerated, true},
		"SessionRetention":   {c.SessionRetention, time.Duration(0)},
		"LogLevel":           {c.LogLevel, slog.LevelInfo},
		"Auth.Mode":          {c.Auth.Mode, config.AuthDev},
		"Auth.ClockSkew":     {c.Auth.ClockSkew, 60 * time.Second},
		"Auth.TenantClaim":   {c.Auth.TenantClaim, "iss"},
		"Auth.Trusted":       {c.Auth.TrustedSubject, "host"},
		"Model.Provider":     {c.Model.Provider, config.ProviderEcho},
		"Model.EchoDelay":    {c.Model.EchoDelay, 20 * time.Millisecond},
		"Model.EchoChunk":    {c.Model.EchoChunk, 4},
		"Model.DefinitionID": {c.Model.DefinitionID, "default"},
		"Model.Revision":     {c.Model.DefinitionRevision, int64(1)},
		"Model.Tools":        {len(c.Model.Tools), 0},
		"Model.MaxSteps":     {c.Model.MaxSteps, 8},
		"Model.MaxTokens":    {c.Model.MaxTokens, 0},
		"Model.DefFile":      {c.Model.DefinitionsFile, ""},
		"Model.Budgets":      {c.Model.MaxOutputTokens + int64(c.Model.MaxToolCalls) + int64(c.Model.MaxWallTime), int64(0)},
		"OnLambda":           {c.OnLambda(), false},
		"Usage.Ledger":       {c.Usage.Ledger, true},
		"Usage.Retention":    {c.Usage.LedgerRetention, 400 * 24 * time.Hour},
		"Usage.Quotas":       {c.Usage.Quotas.IsZero(), true},
		"Usage.FailOpen":     {c.Usage.QuotaFailOpen, false},
		"Usage.QuotaCache":   {c.Usage.QuotaCache, 5 * time.Second},
	}
	for name, ch := range checks {
		t.Run(name, func(t *testing.T) {
			if ch.got != ch.want {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
}

func TestValues(t *testing.T) {
	tests := map[string]struct {
		env   map[string]string
		check func(t *testing.T, c config.Config)
	}{
		"endpoint defaults region": {
			env: map[string]string{"DYNAMODB_ENDPOINT": "http://127.0.0.1:8000"},
			check: func(t *testing.T, c config.Config) {
				if c.Region != "us-east-1" || c.DynamoDBEndpoint != "http://127.0.0.1:8000" {
					t.Errorf("region %q endpoint %q", c.Region, c.DynamoDBEndpoint)
				}
			},
		},
		"explicit region wins": {
			env: map[string]string{"DYNAMODB_ENDPOINT": "http://localhost:8000", "AWS_REGION": "eu-west-1"},
			check: func(t *testing.T, c config.Config) {
				if c.Region != "eu-west-1" {
					t.Errorf("region %q", c.Region)
				}
			},
		},
		"region without endpoint": {
			env: map[string]string{"AWS_REGION": "ap-south-1"},
			check: func(t *testing.T, c config.Config) {
				if c.Region != "ap-south-1" {
					t.Errorf("region %q", c.Region)
				}
			},
		},
		"durations in Go syntax and milliseconds": {
			env: map[string]string{"TURN_TIMEOUT": "1m30s", "CLEANUP_RESERVE": "2500", "LEASE_DURATION": "10s", "SNAPSHOT_INTERVAL": "1", "SESSION_RETENTION": "720h", "ECHO_DELAY": "0"},
			check: func(t *testing.T, c config.Config) {
				got := []time.Duration{c.TurnTimeout, c.CleanupReserve, c.LeaseDuration, c.SnapshotInterval, c.SessionRetention, c.Model.EchoDelay}
				want := []time.Duration{90 * time.Second, 2500 * time.Millisecond, 10 * time.Second, time.Millisecond, 720 * time.Hour, 0}
				if !slices.Equal(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
			},
		},
		"empty value counts as unset": {
			env: map[string]string{"TURN_TIMEOUT": "", "TABLE_NAME": ""},
			check: func(t *testing.T, c config.Config) {
				if c.TurnTimeout != config.DefaultTurnTimeout || c.TableName != "turnstream" {
					t.Errorf("got %v %q", c.TurnTimeout, c.TableName)
				}
			},
		},
		"cursor secret kept as bytes": {
			env: map[string]string{"CURSOR_SECRET": "0123456789abcdef"},
			check: func(t *testing.T, c config.Config) {
				if !bytes.Equal(c.CursorSecret, []byte("0123456789abcdef")) || c.CursorSecretGenerated {
					t.Errorf("secret %q generated %v", c.CursorSecret, c.CursorSecretGenerated)
				}
			},
		},
		"log levels case-insensitive": {
			env: map[string]string{"LOG_LEVEL": "WARN"},
			check: func(t *testing.T, c config.Config) {
				if c.LogLevel != slog.LevelWarn {
					t.Errorf("level %v", c.LogLevel)
				}
			},
		},
		"jwt mode": {
			env: map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks.json", "JWT_ISSUER": "https://idp.example/", "JWT_AUDIENCE": "turnstream", "JWT_CLOCK_SKEW": "0", "JWT_TENANT_CLAIM": "org"},
			check: func(t *testing.T, c config.Config) {
				want := config.AuthConfig{Mode: "jwt", JWKSURL: "https://idp.example/jwks.json", Issuer: "https://idp.example/", Audience: "turnstream", TenantClaim: "org"}
				if c.Auth != want {
					t.Errorf("auth %+v, want %+v", c.Auth, want)
				}
			},
		},
		"chat page signing in with OIDC": {
			env: map[string]string{
				"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://cognito-idp.us-east-1.amazonaws.com/pool/.well-known/jwks.json",
				"JWT_ISSUER": "https://cognito-idp.us-east-1.amazonaws.com/pool", "JWT_AUDIENCE_SECRET": "stack-jwt-audience",
				"CHAT_PAGE": "on", "CHAT_PAGE_OIDC_AUTHORITY": "https://cognito-idp.us-east-1.amazonaws.com/pool/",
				"CHAT_PAGE_OIDC_LOGOUT_URL": "https://chat.auth.us-east-1.amazoncognito.com/logout",
				"CHAT_PAGE_OIDC_ORIGINS":    "https://chat.auth.us-east-1.amazoncognito.com  https://other.example:8443",
				"CHAT_PAGE_UPLOADS_PATH":    "/uploads/",
			},
			check: func(t *testing.T, c config.Config) {
				want := config.PageConfig{
					Serve: true, Authority: "https://cognito-idp.us-east-1.amazonaws.com/pool", Scope: config.DefaultPageScope,
					LogoutURL:      "https://chat.auth.us-east-1.amazoncognito.com/logout",
					ConnectOrigins: []string{"https://chat.auth.us-east-1.amazoncognito.com", "https://other.example:8443"},
					UploadsPath:    "/uploads/",
				}
				if !reflect.DeepEqual(c.Page, want) {
					t.Errorf("page %+v, want %+v", c.Page, want)
				}
				if c.Auth.Audience != "" || c.Auth.AudienceSecret != "stack-jwt-audience" {
					t.Errorf("audience %q, secret %q", c.Auth.Audience, c.Auth.AudienceSecret)
				}
			},
		},
		"chat page client id defaults to the audience": {
			env: map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks", "JWT_ISSUER": "i", "JWT_AUDIENCE": "client-7", "CHAT_PAGE": "on", "CHAT_PAGE_OIDC_AUTHORITY": "https://idp.example", "CHAT_PAGE_OIDC_SCOPE": "openid profile"},
			check: func(t *testing.T, c config.Config) {
				if c.Page.ClientID != "client-7" || c.Page.Scope != "openid profile" || c.Page.LogoutURL != "" || c.Page.ConnectOrigins != nil {
					t.Errorf("page %+v", c.Page)
				}
			},
		},
		"chat page with dev auth": {
			env: map[string]string{"CHAT_PAGE": "on"},
			check: func(t *testing.T, c config.Config) {
				if !c.Page.Serve || c.Page.Authority != "" {
					t.Errorf("page %+v", c.Page)
				}
			},
		},
		"jwt JWKS over http on loopback": {
			env: map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "http://127.0.0.1:9999/jwks", "JWT_ISSUER": "i", "JWT_AUDIENCE": "a"},
			check: func(t *testing.T, c config.Config) {
				if c.Auth.JWKSURL != "http://127.0.0.1:9999/jwks" {
					t.Errorf("JWKS URL %q", c.Auth.JWKSURL)
				}
			},
		},
		"iam mode has no default trusted subject": {
			env: map[string]string{"AUTH_MODE": "iam"},
			check: func(t *testing.T, c config.Config) {
				if c.Auth.TrustedSubject != "" {
					t.Errorf("trusted %q", c.Auth.TrustedSubject)
				}
			},
		},
		"iam mode trusted subject": {
			env: map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_SUBJECT": "arn:aws:iam::123456789012:role/host"},
			check: func(t *testing.T, c config.Config) {
				if c.Auth.TrustedSubject != "arn:aws:iam::123456789012:role/host" {
					t.Errorf("trusted %q", c.Auth.TrustedSubject)
				}
			},
		},
		"trusted principal: dev mode": {
			env:   map[string]string{},
			check: func(t *testing.T, c config.Config) { wantTrusted(t, c, config.DevTenant, "host") },
		},
		"trusted principal: iam tenant from the ARN": {
			env: map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_SUBJECT": "arn:aws:sts::123456789012:assumed-role/host/s"},
			check: func(t *testing.T, c config.Config) {
				wantTrusted(t, c, "123456789012", "arn:aws:sts::123456789012:assumed-role/host/s")
			},
		},
		"trusted principal: iam tenant given": {
			env: map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_SUBJECT": "arn:aws-cn:iam::123456789012:role/host", "ARTIFACTS_TRUSTED_TENANT": "123456789012"},
			check: func(t *testing.T, c config.Config) {
				wantTrusted(t, c, "123456789012", "arn:aws-cn:iam::123456789012:role/host")
			},
		},
		"trusted principal: jwt tenant is the issuer": {
			env:   map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks", "JWT_ISSUER": "https://idp.example/", "JWT_AUDIENCE": "a", "ARTIFACTS_TRUSTED_SUBJECT": "host"},
			check: func(t *testing.T, c config.Config) { wantTrusted(t, c, "https://idp.example/", "host") },
		},
		"trusted principal: jwt tenant claim": {
			env: map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks", "JWT_ISSUER": "i", "JWT_AUDIENCE": "a",
				"JWT_TENANT_CLAIM": "tid", "ARTIFACTS_TRUSTED_SUBJECT": "host", "ARTIFACTS_TRUSTED_TENANT": "A"},
			check: func(t *testing.T, c config.Config) { wantTrusted(t, c, "A", "host") },
		},
		"trusted principal: none": {
			env: map[string]string{"AUTH_MODE": "iam"},
			check: func(t *testing.T, c config.Config) {
				if _, _, ok, err := c.Auth.TrustedPrincipal(); ok || err != nil {
					t.Errorf("TrustedPrincipal ok %v, %v; want none", ok, err)
				}
			},
		},
		"openai provider": {
			env: map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "gpt-x", "OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_API_KEY": "k", "SYSTEM_PROMPT": "Be brief.", "DEFINITION_ID": "support.v2", "DEFINITION_REVISION": "7", "ECHO_CHUNK_RUNES": "1"},
			check: func(t *testing.T, c config.Config) {
				want := config.ModelConfig{Provider: "openai", ModelID: "gpt-x", EchoDelay: 20 * time.Millisecond, EchoChunk: 1, OpenAIBaseURL: "http://localhost:11434/v1", OpenAIAPIKey: "k", SystemPrompt: "Be brief.", DefinitionID: "support.v2", DefinitionRevision: 7, MaxSteps: 8}
				if !reflect.DeepEqual(c.Model, want) {
					t.Errorf("model %+v, want %+v", c.Model, want)
				}
			},
		},
		"definition settings": {
			env: map[string]string{"MODEL_TOOLS": " workspace_note, current-time ,,", "MODEL_MAX_STEPS": "64", "MODEL_MAX_TOKENS": "1000000", "DEFINITIONS_FILE": "/etc/turnstream/definitions.json"},
			check: func(t *testing.T, c config.Config) {
				m := c.Model
				if !slices.Equal(m.Tools, []string{"workspace_note", "current-time"}) || m.MaxSteps != 64 || m.MaxTokens != 1_000_000 || m.DefinitionsFile != "/etc/turnstream/definitions.json" {
					t.Errorf("model %+v", m)
				}
			},
		},
		"approval tools and ttl": {
			env: map[string]string{"MODEL_TOOLS": "workspace_note, workspace_note_delete:approval", "CONFIRMATION_TTL": "2m"},
			check: func(t *testing.T, c config.Config) {
				m := c.Model
				if !slices.Equal(m.Tools, []string{"workspace_note", "workspace_note_delete"}) || !slices.Equal(m.ApprovalTools, []string{"workspace_note_delete"}) ||
					c.ConfirmationTTL != 2*time.Minute {
					t.Errorf("model %+v, ttl %v", m, c.ConfirmationTTL)
				}
			},
		},
		"bedrock provider": {
			env: map[string]string{"MODEL_PROVIDER": "bedrock", "MODEL_ID": "anthropic.claude"},
			check: func(t *testing.T, c config.Config) {
				if c.Model.Provider != "bedrock" || c.Model.ModelID != "anthropic.claude" {
					t.Errorf("model %+v", c.Model)
				}
			},
		},
		"limits inclusive": {
			env: map[string]string{"MAX_BODY_BYTES": "6291456", "TURN_TIMEOUT": "15m", "CLEANUP_RESERVE": "1ms", "LEASE_DURATION": "1s", "SNAPSHOT_INTERVAL": "10s", "JWT_CLOCK_SKEW": "5m", "ECHO_CHUNK_RUNES": "4096", "ECHO_DELAY": "10s", "SESSION_RETENTION": "1m", "DEFINITION_REVISION": "9007199254740991", "TABLE_NAME": "a.b"},
			check: func(t *testing.T, c config.Config) {
				if c.MaxBodyBytes != 6<<20 || c.TurnTimeout != 15*time.Minute || c.Model.DefinitionRevision != 1<<53-1 {
					t.Errorf("got %+v", c)
				}
			},
		},
		"usage ledger and quotas": {
			env: map[string]string{"QUOTAS": `{"principal":{"turnsPerMinute":3,"tokensPerDay":1000},"tenant":{"concurrentSessions":20}}`,
				"LEDGER_RETENTION": "24h", "QUOTA_FAIL_MODE": "open", "QUOTA_CACHE": "0", "MODEL_MAX_OUTPUT_TOKENS": "500",
				"MODEL_MAX_TOOL_CALLS": "3", "MODEL_MAX_WALL_TIME": "90s"},
			check: func(t *testing.T, c config.Config) {
				want := config.UsageConfig{Ledger: true, LedgerRetention: 24 * time.Hour, QuotaFailOpen: true,
					Quotas: chat.Quotas{Principal: chat.QuotaLimits{TurnsPerMinute: 3, TokensPerDay: 1000}, Tenant: chat.QuotaLimits{ConcurrentSessions: 20}}}
				if c.Usage != want {
					t.Errorf("usage %+v, want %+v", c.Usage, want)
				}
				d := c.Definitions()
				if d.DefaultQuotas != want.Quotas || d.Single.Limits.MaxOutputTokens != 500 || d.Single.Limits.MaxToolCalls != 3 || d.Single.Limits.MaxWallTime != 90*time.Second {
					t.Errorf("definitions config %+v", d)
				}
			},
		},
		"ledger off": {
			env: map[string]string{"USAGE_LEDGER": "off"},
			check: func(t *testing.T, c config.Config) {
				if c.Usage.Ledger {
					t.Error("ledger on")
				}
			},
		},
		"on Lambda": {
			env: map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "turnstream-history"},
			check: func(t *testing.T, c config.Config) {
				if !c.OnLambda() || c.LambdaFunctionName != "turnstream-history" {
					t.Errorf("OnLambda %v name %q", c.OnLambda(), c.LambdaFunctionName)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.check(t, mustParse(t, tc.env))
		})
	}
}

func TestInvalid(t *testing.T) {
	const uploadsPathErr = "CHAT_PAGE_UPLOADS_PATH: want a path such as /uploads/ (letters, digits, '-', '_' and '/', starting and ending with '/', at most 64 bytes)"
	jwt := map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks", "JWT_ISSUER": "i", "JWT_AUDIENCE": "a"}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{k: v}
		for bk, bv := range base {
			if bk != k {
				m[bk] = bv
			}
		}
		return m
	}
	without := func(base map[string]string, k string) map[string]string {
		m := map[string]string{}
		for bk, bv := range base {
			if bk != k {
				m[bk] = bv
			}
		}
		return m
	}
	tests := map[string]struct {
		env  map[string]string
		want string // the whole error text
	}{
		"table name short":               {map[string]string{"TABLE_NAME": "ab"}, "TABLE_NAME: want 3..255 characters of [A-Za-z0-9_.-]"},
		"table name long":                {map[string]string{"TABLE_NAME": strings.Repeat("t", 256)}, "TABLE_NAME: want 3..255 characters of [A-Za-z0-9_.-]"},
		"table name character":           {map[string]string{"TABLE_NAME": "turn stream"}, "TABLE_NAME: want 3..255 characters of [A-Za-z0-9_.-]"},
		"endpoint relative":              {map[string]string{"DYNAMODB_ENDPOINT": "localhost:8000"}, "DYNAMODB_ENDPOINT: not an absolute http or https URL"},
		"bucket too short":               {map[string]string{"ATTACHMENTS_BUCKET": "ab"}, "ATTACHMENTS_BUCKET: want 3..63 characters of [a-z0-9.-], starting and ending with a letter or digit"},
		"bucket upper case":              {map[string]string{"ATTACHMENTS_BUCKET": "My-Bucket"}, "ATTACHMENTS_BUCKET: want 3..63 characters of [a-z0-9.-], starting and ending with a letter or digit"},
		"bucket ends with a hyphen":      {map[string]string{"ATTACHMENTS_BUCKET": "bucket-"}, "ATTACHMENTS_BUCKET: want 3..63 characters of [a-z0-9.-], starting and ending with a letter or digit"},
		"bucket too long":                {map[string]string{"ATTACHMENTS_BUCKET": strings.Repeat("b", 64)}, "ATTACHMENTS_BUCKET: want 3..63 characters of [a-z0-9.-], starting and ending with a letter or digit"},
		"endpoint scheme":                {map[string]string{"DYNAMODB_ENDPOINT": "ftp://localhost"}, "DYNAMODB_ENDPOINT: not an absolute http or https URL"},
		"endpoint userinfo":              {map[string]string{"DYNAMODB_ENDPOINT": "http://u:p@localhost"}, "DYNAMODB_ENDPOINT: not an absolute http or https URL"},
		"turn timeout syntax":            {map[string]string{"TURN_TIMEOUT": "thirty"}, `TURN_TIMEOUT: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"turn timeout unitless float":    {map[string]string{"TURN_TIMEOUT": "1.5"}, `TURN_TIMEOUT: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"turn timeout zero":              {map[string]string{"TURN_TIMEOUT": "0"}, "TURN_TIMEOUT: out of range (want 1ms..15m0s)"},
		"turn timeout negative":          {map[string]string{"TURN_TIMEOUT": "-1s"}, "TURN_TIMEOUT: out of range (want 1ms..15m0s)"},
		"turn timeout negative ms":       {map[string]string{"TURN_TIMEOUT": "-5"}, "TURN_TIMEOUT: out of range (want 1ms..15m0s)"},
		"turn timeout too long":          {map[string]string{"TURN_TIMEOUT": "16m"}, "TURN_TIMEOUT: out of range (want 1ms..15m0s)"},
		"turn timeout ms overflow":       {map[string]string{"TURN_TIMEOUT": "9223372036854775807"}, "TURN_TIMEOUT: out of range (want 1ms..15m0s)"},
		"turn timeout int overflow":      {map[string]string{"TURN_TIMEOUT": "99999999999999999999"}, `TURN_TIMEOUT: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"cleanup reserve zero":           {map[string]string{"CLEANUP_RESERVE": "0s"}, "CLEANUP_RESERVE: out of range (want 1ms..15m0s)"},
		"cleanup equals timeout":         {map[string]string{"TURN_TIMEOUT": "5s", "CLEANUP_RESERVE": "5s"}, "CLEANUP_RESERVE: must be less than TURN_TIMEOUT"},
		"cleanup above timeout":          {map[string]string{"TURN_TIMEOUT": "2s"}, "CLEANUP_RESERVE: must be less than TURN_TIMEOUT"},
		"cleanup syntax":                 {map[string]string{"CLEANUP_RESERVE": "5 s"}, `CLEANUP_RESERVE: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"lease short":                    {map[string]string{"LEASE_DURATION": "999ms"}, "LEASE_DURATION: out of range (want 1s..1h0m0s)"},
		"attempt timeout short":          {map[string]string{"DYNAMODB_ATTEMPT_TIMEOUT": "5ms"}, "DYNAMODB_ATTEMPT_TIMEOUT: out of range (want 10ms..30s)"},
		"checkpoint interval short":      {map[string]string{"CHECKPOINT_INTERVAL": "50ms"}, "CHECKPOINT_INTERVAL: out of range (want 0 to turn checkpoints off, or 100ms..1m0s)"},
		"checkpoint interval long":       {map[string]string{"CHECKPOINT_INTERVAL": "2m"}, "CHECKPOINT_INTERVAL: out of range (want 0s..1m0s)"},
		"resume poll too slow":           {map[string]string{"RESUME_POLL_INTERVAL": "1s"}, "RESUME_POLL_INTERVAL: out of range (want 10ms..500ms)"},
		"snapshot budget low":            {map[string]string{"SNAPSHOT_BYTES_PER_SECOND": "10"}, "SNAPSHOT_BYTES_PER_SECOND: out of range (want 256..1073741824)"},
		"checkpoint change negative":     {map[string]string{"CHECKPOINT_MIN_CHANGE": "-1"}, "CHECKPOINT_MIN_CHANGE: out of range (want 0..65536)"},
		"checkpoint change too big":      {map[string]string{"CHECKPOINT_MIN_CHANGE": "70000"}, "CHECKPOINT_MIN_CHANGE: out of range (want 0..65536)"},
		"checkpoint change not a number": {map[string]string{"CHECKPOINT_MIN_CHANGE": "1KB"}, "CHECKPOINT_MIN_CHANGE: not an integer"},
		"snapshot gap below interval":    {map[string]string{"SNAPSHOT_INTERVAL": "3s", "SNAPSHOT_MAX_GAP": "1s"}, "SNAPSHOT_MAX_GAP: below SNAPSHOT_INTERVAL"},
		"attempt timeout syntax":         {map[string]string{"DYNAMODB_ATTEMPT_TIMEOUT": "soon"}, `DYNAMODB_ATTEMPT_TIMEOUT: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"lease long":                     {map[string]string{"LEASE_DURATION": "2h"}, "LEASE_DURATION: out of range (want 1s..1h0m0s)"},
		"lease syntax":                   {map[string]string{"LEASE_DURATION": "30sec"}, `LEASE_DURATION: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"snapshot interval zero":         {map[string]string{"SNAPSHOT_INTERVAL": "0"}, "SNAPSHOT_INTERVAL: out of range (want 1ms..10s)"},
		"snapshot interval sub-ms":       {map[string]string{"SNAPSHOT_INTERVAL": "500us"}, "SNAPSHOT_INTERVAL: out of range (want 1ms..10s)"},
		"snapshot interval long":         {map[string]string{"SNAPSHOT_INTERVAL": "11s"}, "SNAPSHOT_INTERVAL: out of range (want 1ms..10s)"},
		"body bytes zero":                {map[string]string{"MAX_BODY_BYTES": "0"}, "MAX_BODY_BYTES: out of range (want 1..6291456)"},
		"body bytes negative":            {map[string]string{"MAX_BODY_BYTES": "-1"}, "MAX_BODY_BYTES: out of range (want 1..6291456)"},
		"body bytes above 6 MiB":         {map[string]string{"MAX_BODY_BYTES": "6291457"}, "MAX_BODY_BYTES: out of range (want 1..6291456)"},
		"body bytes syntax":              {map[string]string{"MAX_BODY_BYTES": "64KiB"}, "MAX_BODY_BYTES: not an integer"},
		"cursor secret short":            {map[string]string{"CURSOR_SECRET": "fifteen-bytes.."}, "CURSOR_SECRET: want at least 16 bytes"},
		"cursor secret and its ARN": {map[string]string{"CURSOR_SECRET": "0123456789abcdef",
			"CURSOR_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:c"}, "CURSOR_SECRET_ARN: set CURSOR_SECRET or CURSOR_SECRET_ARN, not both"},
		"cursor secret ARN of another service": {map[string]string{"CURSOR_SECRET_ARN": "arn:aws:ssm:us-east-1:123456789012:parameter/c"},
			"CURSOR_SECRET_ARN: not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)"},
		"cursor secret ARN not an ARN":      {map[string]string{"CURSOR_SECRET_ARN": "my-secret"}, "CURSOR_SECRET_ARN: not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)"},
		"retention negative":                {map[string]string{"SESSION_RETENTION": "-1h"}, "SESSION_RETENTION: out of range (want 0s..876000h0m0s)"},
		"retention short":                   {map[string]string{"SESSION_RETENTION": "59s"}, "SESSION_RETENTION: want 0 (keep) or at least 1m"},
		"retention syntax":                  {map[string]string{"SESSION_RETENTION": "30d"}, `SESSION_RETENTION: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"log level":                         {map[string]string{"LOG_LEVEL": "verbose"}, "LOG_LEVEL: want debug, info, warn or error"},
		"auth mode":                         {map[string]string{"AUTH_MODE": "basic"}, "AUTH_MODE: want dev, jwt or iam"},
		"auth mode case":                    {map[string]string{"AUTH_MODE": "JWT"}, "AUTH_MODE: want dev, jwt or iam"},
		"jwt without JWKS URL":              {without(jwt, "JWT_JWKS_URL"), "JWT_JWKS_URL: required when AUTH_MODE is jwt"},
		"jwt without issuer":                {without(jwt, "JWT_ISSUER"), "JWT_ISSUER: required when AUTH_MODE is jwt"},
		"jwt without audience":              {without(jwt, "JWT_AUDIENCE"), "JWT_AUDIENCE: required when AUTH_MODE is jwt (or JWT_AUDIENCE_SECRET)"},
		"jwt audience twice":                {with(jwt, "JWT_AUDIENCE_SECRET", "name"), "JWT_AUDIENCE_SECRET: set JWT_AUDIENCE or JWT_AUDIENCE_SECRET, not both"},
		"chat page neither on nor off":      {map[string]string{"CHAT_PAGE": "yes"}, "CHAT_PAGE: want on or off"},
		"chat page with iam":                {map[string]string{"AUTH_MODE": "iam", "CHAT_PAGE": "on"}, "CHAT_PAGE: a browser cannot sign IAM requests: serve the page with AUTH_MODE jwt"},
		"chat page with jwt, no issuer":     {with(jwt, "CHAT_PAGE", "on"), "CHAT_PAGE_OIDC_AUTHORITY: required when CHAT_PAGE is on with AUTH_MODE jwt"},
		"chat page authority with dev auth": {map[string]string{"CHAT_PAGE_OIDC_AUTHORITY": "https://idp.example"}, "CHAT_PAGE_OIDC_AUTHORITY: the page would send tokens that AUTH_MODE dev does not read: use AUTH_MODE jwt"},
		"chat page authority over http":     {with(with(jwt, "CHAT_PAGE", "on"), "CHAT_PAGE_OIDC_AUTHORITY", "http://idp.example"), "CHAT_PAGE_OIDC_AUTHORITY: not an absolute https URL (http only for a loopback host)"},
		"chat page without a client": {with(without(without(jwt, "JWT_AUDIENCE"), "JWT_JWKS_URL"), "CHAT_PAGE_OIDC_AUTHORITY", "https://idp.example"),
			"JWT_JWKS_URL: required when AUTH_MODE is jwt\nJWT_AUDIENCE: required when AUTH_MODE is jwt (or JWT_AUDIENCE_SECRET)\nCHAT_PAGE_OIDC_CLIENT_ID: required with CHAT_PAGE_OIDC_AUTHORITY when JWT_AUDIENCE is unset"},
		"chat page scope without openid": {with(jwt, "CHAT_PAGE_OIDC_SCOPE", "email profile"), "CHAT_PAGE_OIDC_SCOPE: must hold openid"},
		"chat page logout over http":     {with(jwt, "CHAT_PAGE_OIDC_LOGOUT_URL", "http://idp.example/logout"), "CHAT_PAGE_OIDC_LOGOUT_URL: not an absolute https URL (http only for a loopback host)"},
		"chat page origin with a path":   {with(jwt, "CHAT_PAGE_OIDC_ORIGINS", "https://a.example https://b.example/x"), "CHAT_PAGE_OIDC_ORIGINS: want space-separated origins (https://host[:port], http only for a loopback host)"},
		"chat page origin over http":     {with(jwt, "CHAT_PAGE_OIDC_ORIGINS", "http://a.example"), "CHAT_PAGE_OIDC_ORIGINS: want space-separated origins (https://host[:port], http only for a loopback host)"},
		"uploads path without slashes":   {with(jwt, "CHAT_PAGE_UPLOADS_PATH", "files"), uploadsPathErr},
		"uploads path with a dot":        {with(jwt, "CHAT_PAGE_UPLOADS_PATH", "/../files/"), uploadsPathErr},
		"uploads path with a query":      {with(jwt, "CHAT_PAGE_UPLOADS_PATH", "/files/?x=1/"), uploadsPathErr},
		"uploads path with an empty seg": {with(jwt, "CHAT_PAGE_UPLOADS_PATH", "/a//b/"), uploadsPathErr},
		"uploads path too long":          {with(jwt, "CHAT_PAGE_UPLOADS_PATH", "/"+strings.Repeat("a", 64)+"/"), uploadsPathErr},
		"uploads path of another host":   {with(jwt, "CHAT_PAGE_UPLOADS_PATH", "//evil.example/"), uploadsPathErr},
		"jwt JWKS over http":             {with(jwt, "JWT_JWKS_URL", "http://idp.example/jwks"), "JWT_JWKS_URL: not an absolute https URL (http only for a loopback host)"},
		"jwt JWKS not a URL":             {with(jwt, "JWT_JWKS_URL", "::"), "JWT_JWKS_URL: not an absolute https URL (http only for a loopback host)"},
		"jwt skew negative":              {with(jwt, "JWT_CLOCK_SKEW", "-1s"), "JWT_CLOCK_SKEW: out of range (want 0s..5m0s)"},
		"jwt skew long":                  {with(jwt, "JWT_CLOCK_SKEW", "6m"), "JWT_CLOCK_SKEW: out of range (want 0s..5m0s)"},
		"jwt skew syntax":                {with(jwt, "JWT_CLOCK_SKEW", "1 minute"), `JWT_CLOCK_SKEW: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"provider":                       {map[string]string{"MODEL_PROVIDER": "anthropic"}, "MODEL_PROVIDER: want echo, bedrock or openai"},
		"bedrock without model id":       {map[string]string{"MODEL_PROVIDER": "bedrock"}, "MODEL_ID: required when MODEL_PROVIDER is bedrock or openai"},
		"openai without model id":        {map[string]string{"MODEL_PROVIDER": "openai"}, "MODEL_ID: required when MODEL_PROVIDER is bedrock or openai"},
		"openai base URL":                {map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "m", "OPENAI_BASE_URL": "api.openai.com/v1"}, "OPENAI_BASE_URL: not an absolute http or https URL"},
		"openai key and its secret":      {map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "m", "OPENAI_API_KEY": "k", "OPENAI_API_KEY_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:openai-AbCdEf"}, "OPENAI_API_KEY_SECRET_ARN: set OPENAI_API_KEY or OPENAI_API_KEY_SECRET_ARN, not both"},
		"openai key secret not an ARN":   {map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "m", "OPENAI_API_KEY_SECRET_ARN": "sk-a-key-pasted-here"}, "OPENAI_API_KEY_SECRET_ARN: not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)"},
		"echo delay negative":            {map[string]string{"ECHO_DELAY": "-1ms"}, "ECHO_DELAY: out of range (want 0s..10s)"},
		"echo delay long":                {map[string]string{"ECHO_DELAY": "11s"}, "ECHO_DELAY: out of range (want 0s..10s)"},
		"echo delay syntax":              {map[string]string{"ECHO_DELAY": "fast"}, `ECHO_DELAY: not a duration (want Go syntax such as "30s" or integer milliseconds)`},
		"model tools name":               {map[string]string{"MODEL_TOOLS": "ok,not ok"}, "MODEL_TOOLS: want comma-separated tool names of 1..64 [A-Za-z0-9_-], each optionally followed by :approval"},
		"model tools bad mark":           {map[string]string{"MODEL_TOOLS": "ok,del:approve"}, "MODEL_TOOLS: want comma-separated tool names of 1..64 [A-Za-z0-9_-], each optionally followed by :approval"},
		"model tools marked repeat":      {map[string]string{"MODEL_TOOLS": "a,a:approval"}, "MODEL_TOOLS: a tool is listed twice"},
		"confirmation ttl too short":     {map[string]string{"CONFIRMATION_TTL": "500ms"}, "CONFIRMATION_TTL: out of range (want 1s..168h0m0s)"},
		"model tools repeated":           {map[string]string{"MODEL_TOOLS": "a,b,a"}, "MODEL_TOOLS: a tool is listed twice"},
		"model max steps zero":           {map[string]string{"MODEL_MAX_STEPS": "0"}, "MODEL_MAX_STEPS: out of range (want 1..64)"},
		"model max steps large":          {map[string]string{"MODEL_MAX_STEPS": "65"}, "MODEL_MAX_STEPS: out of range (want 1..64)"},
		"model max tokens negative":      {map[string]string{"MODEL_MAX_TOKENS": "-1"}, "MODEL_MAX_TOKENS: out of range (want 0..1000000)"},
		"model max tokens large":         {map[string]string{"MODEL_MAX_TOKENS": "1000001"}, "MODEL_MAX_TOKENS: out of range (want 0..1000000)"},
		"echo chunk zero":                {map[string]string{"ECHO_CHUNK_RUNES": "0"}, "ECHO_CHUNK_RUNES: out of range (want 1..4096)"},
		"echo chunk large":               {map[string]string{"ECHO_CHUNK_RUNES": "4097"}, "ECHO_CHUNK_RUNES: out of range (want 1..4096)"},
		"echo chunk syntax":              {map[string]string{"ECHO_CHUNK_RUNES": "four"}, "ECHO_CHUNK_RUNES: not an integer"},
		"definition id":                  {map[string]string{"DEFINITION_ID": "-default"}, "DEFINITION_ID: not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)"},
		"definition id long":             {map[string]string{"DEFINITION_ID": strings.Repeat("d", 129)}, "DEFINITION_ID: not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)"},
		"definition id character":        {map[string]string{"DEFINITION_ID": "a/b"}, "DEFINITION_ID: not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)"},
		"definition revision zero":       {map[string]string{"DEFINITION_REVISION": "0"}, "DEFINITION_REVISION: out of range (want 1..9007199254740991)"},
		"definition revision 2^53":       {map[string]string{"DEFINITION_REVISION": "9007199254740992"}, "DEFINITION_REVISION: out of range (want 1..9007199254740991)"},
		"definition revision float":      {map[string]string{"DEFINITION_REVISION": "1.0"}, "DEFINITION_REVISION: not an integer"},
		"quotas not JSON":                {map[string]string{"QUOTAS": "turnsPerMinute=3"}, "QUOTAS: (root): invalid JSON at byte 1"},
		"quotas unknown member":          {map[string]string{"QUOTAS": `{"principal":{"turnsPerHour":3}}`}, "QUOTAS: /principal/turnsPerHour: unknown member"},
		"quotas zero":                    {map[string]string{"QUOTAS": `{"tenant":{"tokensPerDay":0}}`}, "QUOTAS: quotas.tenant.tokensPerDay: want 1..2^53-1 (omit it for no limit)"},
		"quotas without ledger":          {map[string]string{"QUOTAS": `{"principal":{"turnsPerMinute":3}}`, "USAGE_LEDGER": "off"}, "QUOTAS: quotas need the usage ledger (USAGE_LEDGER=on)"},
		"usage ledger":                   {map[string]string{"USAGE_LEDGER": "yes"}, "USAGE_LEDGER: want on or off"},
		"ledger retention short":         {map[string]string{"LEDGER_RETENTION": "1h"}, "LEDGER_RETENTION: out of range (want 24h0m0s..87600h0m0s)"},
		"quota fail mode":                {map[string]string{"QUOTA_FAIL_MODE": "ajar"}, "QUOTA_FAIL_MODE: want closed or open"},
		"quota cache long":               {map[string]string{"QUOTA_CACHE": "2m"}, "QUOTA_CACHE: out of range (want 0s..1m0s)"},
		"max output tokens negative":     {map[string]string{"MODEL_MAX_OUTPUT_TOKENS": "-1"}, "MODEL_MAX_OUTPUT_TOKENS: out of range (want 0..100000000)"},
		"max tool calls large":           {map[string]string{"MODEL_MAX_TOOL_CALLS": "10001"}, "MODEL_MAX_TOOL_CALLS: out of range (want 0..10000)"},
		"max wall time long":             {map[string]string{"MODEL_MAX_WALL_TIME": "16m"}, "MODEL_MAX_WALL_TIME: out of range (want 0s..15m0s)"},
		"several at once": {
			map[string]string{"TURN_TIMEOUT": "x", "LOG_LEVEL": "loud", "MODEL_PROVIDER": "nope"},
			"TURN_TIMEOUT: not a duration (want Go syntax such as \"30s\" or integer milliseconds)\nLOG_LEVEL: want debug, info, warn or error\nMODEL_PROVIDER: want echo, bedrock or openai",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := config.FromLookup(env(tc.env))
			if err == nil {
				t.Fatalf("FromLookup succeeded: %+v", c)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q\nwant      %q", err, tc.want)
			}
			for k, v := range tc.env {
				// The message of a variable at fault never repeats its value
				// (which may be a secret).
				for _, line := range strings.Split(err.Error(), "\n") {
					if strings.HasPrefix(line, k+":") && len(v) >= 3 && strings.Contains(line, v) {
						t.Errorf("error repeats the value of %s", k)
					}
				}
			}
			if c.TableName != "" || c.CursorSecret != nil {
				t.Errorf("a failed parse returned a partial Config: %+v", c)
			}
		})
	}
}

// TestInvalidTrustedPrincipal: the trusted principal is a tenant and a
// subject; a configuration that leaves its tenant open, or names one no
// principal can have, fails naming the variable to fix.
func TestInvalidTrustedPrincipal(t *testing.T) {
	jwt := map[string]string{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://idp.example/jwks", "JWT_ISSUER": "i", "JWT_AUDIENCE": "a"}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{k: v}
		for bk, bv := range base {
			if bk != k {
				m[bk] = bv
			}
		}
		return m
	}
	without := func(base map[string]string, k string) map[string]string {
		m := map[string]string{}
		for bk, bv := range base {
			if bk != k {
				m[bk] = bv
			}
		}
		return m
	}
	tests := map[string]struct {
		env  map[string]string
		want string // the whole error text
	}{
		"jwt tenant claim, trusted subject alone": {with(with(jwt, "JWT_TENANT_CLAIM", "tid"), "ARTIFACTS_TRUSTED_SUBJECT", "host"),
			"ARTIFACTS_TRUSTED_TENANT: required when ARTIFACTS_TRUSTED_SUBJECT is set and JWT_TENANT_CLAIM is not iss (the trusted principal is a tenant and a subject)"},
		"jwt trusted tenant other than the issuer": {with(with(jwt, "ARTIFACTS_TRUSTED_SUBJECT", "host"), "ARTIFACTS_TRUSTED_TENANT", "acme"),
			"ARTIFACTS_TRUSTED_TENANT: no jwt-mode principal with subject ARTIFACTS_TRUSTED_SUBJECT has this tenant; leave it empty"},
		"jwt without issuer, trusted subject": {without(with(jwt, "ARTIFACTS_TRUSTED_SUBJECT", "host"), "JWT_ISSUER"), "JWT_ISSUER: required when AUTH_MODE is jwt"},
		"unknown mode, trusted subject":       {map[string]string{"AUTH_MODE": "basic", "ARTIFACTS_TRUSTED_SUBJECT": "host"}, "AUTH_MODE: want dev, jwt or iam"},
		"trusted tenant without subject": {map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_TENANT": "123456789012"},
			"ARTIFACTS_TRUSTED_TENANT: set without ARTIFACTS_TRUSTED_SUBJECT"},
		"iam trusted subject not an ARN": {map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_SUBJECT": "host"},
			"ARTIFACTS_TRUSTED_SUBJECT: in iam mode, want the trusted writer's IAM ARN (arn:<partition>:<service>::<account id>:<resource>)"},
		"iam trusted ARN without account": {map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_SUBJECT": "arn:aws:s3:::bucket/key"},
			"ARTIFACTS_TRUSTED_SUBJECT: in iam mode, want the trusted writer's IAM ARN (arn:<partition>:<service>::<account id>:<resource>)"},
		"iam trusted tenant not the ARN's account": {map[string]string{"AUTH_MODE": "iam", "ARTIFACTS_TRUSTED_SUBJECT": "arn:aws:iam::123456789012:role/host", "ARTIFACTS_TRUSTED_TENANT": "210987654321"},
			"ARTIFACTS_TRUSTED_TENANT: no iam-mode principal with subject ARTIFACTS_TRUSTED_SUBJECT has this tenant; leave it empty"},
		"dev trusted tenant not dev": {map[string]string{"ARTIFACTS_TRUSTED_TENANT": "acme"},
			"ARTIFACTS_TRUSTED_TENANT: no dev-mode principal with subject ARTIFACTS_TRUSTED_SUBJECT has this tenant; leave it empty"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := config.FromLookup(env(tc.env))
			if err == nil {
				t.Fatalf("FromLookup succeeded: %+v", c)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q\nwant      %q", err, tc.want)
			}
			for k, v := range tc.env {
				if strings.Contains(err.Error(), k+": ") && len(v) >= 3 && strings.Contains(err.Error(), v) {
					t.Errorf("error repeats the value of %s", k)
				}
			}
		})
	}
}

func TestVariablesListsEveryRead(t *testing.T) {
	read := map[string]bool{}
	// Set every mode so that conditional reads happen too.
	for _, m := range []map[string]string{
		nil,
		{"DYNAMODB_ENDPOINT": "http://127.0.0.1:1", "AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://x/j", "JWT_ISSUER": "i", "JWT_AUDIENCE": "a", "MODEL_PROVIDER": "openai", "MODEL_ID": "m", "CURSOR_SECRET": "0123456789abcdef"},
		{"AUTH_MODE": "jwt", "JWT_JWKS_URL": "https://x/j", "JWT_ISSUER": "i", "JWT_AUDIENCE_SECRET": "a", "CHAT_PAGE": "on", "CHAT_PAGE_OIDC_AUTHORITY": "https://x", "CHAT_PAGE_OIDC_CLIENT_ID": "c", "CHAT_PAGE_OIDC_ORIGINS": "https://y", "CHAT_PAGE_OIDC_LOGOUT_URL": "https://y/logout", "CHAT_PAGE_UPLOADS_PATH": "/uploads/"},
	} {
		if _, err := config.FromLookup(recordingEnv(m, read)); err != nil {
			t.Fatal(err)
		}
	}
	all := append(slices.Concat(config.Variables, config.OptionalVariables), config.RuntimeVariables...)
	for name := range read {
		if !slices.Contains(all, name) {
			t.Errorf("FromLookup reads %s, which neither Variables nor RuntimeVariables lists", name)
		}
	}
	for _, name := range all {
		if !read[name] {
			t.Errorf("%s is listed but never read", name)
		}
	}
	for _, list := range [][]string{config.Variables, config.OptionalVariables, config.RuntimeVariables} {
		if !slices.IsSorted(list) {
			t.Errorf("not sorted: %v", list)
		}
		if len(slices.Compact(slices.Clone(list))) != len(list) {
			t.Errorf("duplicates: %v", list)
		}
	}
}

func TestCursorSecret(t *testing.T) {
	t.Run("generated per parse, random", func(t *testing.T) {
		a, b := mustParse(t, nil), mustParse(t, nil)
		if bytes.Equal(a.CursorSecret, b.CursorSecret) {
			t.Error("two generated secrets are equal")
		}
	})
	tests := map[string]struct {
		env     map[string]string
		wantErr error
	}{
		"local, unset":     {nil, nil},
		"local, set":       {map[string]string{"CURSOR_SECRET": "0123456789abcdef"}, nil},
		"on Lambda, set":   {map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "f", "CURSOR_SECRET": "0123456789abcdef"}, nil},
		"on Lambda, unset": {map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "f"}, config.ErrCursorSecretRequired},
		"on Lambda, ARN not installed yet": {map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "f",
			"CURSOR_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:cursor-AbCdEf"}, config.ErrCursorSecretRequired},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := mustParse(t, tc.env)
			if err := c.RequireCursorSecret(); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("RequireCursorSecret = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestFromEnvParsesOnce(t *testing.T) {
	t.Setenv("TURN_TIMEOUT", "7s")
	t.Setenv("CURSOR_SECRET", "")
	a, errA := config.FromEnv()
	t.Setenv("TURN_TIMEOUT", "8s")
	b, errB := config.FromEnv()
	if errA != nil || errB != nil {
		t.Fatalf("FromEnv: %v, %v", errA, errB)
	}
	if a.TurnTimeout != 7*time.Second || b.TurnTimeout != 7*time.Second {
		t.Errorf("TurnTimeout %v then %v, want 7s both times", a.TurnTimeout, b.TurnTimeout)
	}
	if !bytes.Equal(a.CursorSecret, b.CursorSecret) {
		t.Error("the generated cursor secret changed between calls")
	}
	a.CursorSecret[0] ^= 0xff
	if bytes.Equal(a.CursorSecret, b.CursorSecret) {
		t.Error("callers share one CursorSecret slice")
	}
}

// wantTrusted checks c's trusted principal.
func wantTrusted(t *testing.T, c config.Config, tenant, subject string) {
	t.Helper()
	gotTenant, gotSubject, ok, err := c.Auth.TrustedPrincipal()
	if err != nil || !ok || gotTenant != tenant || gotSubject != subject {
		t.Errorf("TrustedPrincipal = %q, %q, %v, %v; want %q, %q", gotTenant, gotSubject, ok, err, tenant, subject)
	}
}

func TestSetCursorSecret(t *testing.T) {
	c := mustParse(t, map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "f",
		"CURSOR_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:cursor-AbCdEf"})
	if c.CursorSecretARN != "arn:aws:secretsmanager:us-east-1:123456789012:secret:cursor-AbCdEf" || !c.CursorSecretGenerated {
		t.Fatalf("ARN %q generated %v", c.CursorSecretARN, c.CursorSecretGenerated)
	}
	before := append([]byte(nil), c.CursorSecret...)
	if err := c.SetCursorSecret([]byte("fifteen-bytes..")); !errors.Is(err, config.ErrCursorSecretShort) ||
		!bytes.Equal(c.CursorSecret, before) || !c.CursorSecretGenerated {
		t.Errorf("short secret: %v; secret changed %v", err, !bytes.Equal(c.CursorSecret, before))
	}
	secret := []byte("0123456789abcdef-from-secrets-manager")
	if err := c.SetCursorSecret(secret); err != nil {
		t.Fatal(err)
	}
	secret[0] = 'X'
	if string(c.CursorSecret) != "0123456789abcdef-from-secrets-manager" || c.CursorSecretGenerated {
		t.Errorf("secret %q generated %v, want a copy of the installed one", c.CursorSecret, c.CursorSecretGenerated)
	}
	if err := c.RequireCursorSecret(); err != nil {
		t.Errorf("RequireCursorSecret after SetCursorSecret: %v", err)
	}
}
