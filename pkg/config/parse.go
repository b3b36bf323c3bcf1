package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

func (p *parser) telemetry(onLambda bool) telemetry.Config {
	def := telemetry.MetricsOff
	if onLambda {
		def = telemetry.MetricsEMF
	}
	t := telemetry.Config{
		Metrics:   strings.ToLower(p.str("TELEMETRY_METRICS", def)),
		Namespace: p.str("TELEMETRY_NAMESPACE", telemetry.DefaultNamespace),
		Service:   p.str("OTEL_SERVICE_NAME", telemetry.DefaultService),
	}
	if t.Metrics != telemetry.MetricsEMF && t.Metrics != telemetry.MetricsOff {
		p.fail("TELEMETRY_METRICS", "want emf or off")
	}
	if !telemetry.ValidNamespace(t.Namespace) {
		p.fail("TELEMETRY_NAMESPACE", "want 1..255 characters of [A-Za-z0-9._#:/-], not starting with AWS/")
	}
	if len(t.Service) > telemetry.MaxDimensionValueLength {
		p.fail("OTEL_SERVICE_NAME", "longer than 1024 bytes")
	}
	if u := p.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""); u != "" {
		if !validHTTPURL(u, false) {
			p.fail("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not an absolute http or https URL")
		}
		t.TracesURL = u
	}
	if u := p.str("OTEL_EXPORTER_OTLP_ENDPOINT", ""); u != "" {
		if !validHTTPURL(u, false) {
			p.fail("OTEL_EXPORTER_OTLP_ENDPOINT", "not an absolute http or https URL")
		}
		if t.TracesURL == "" {
			t.TracesURL = strings.TrimRight(u, "/") + "/v1/traces"
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := p.str(name, "http/json"); v != "http/json" {
			p.fail(name, "turnstream exports http/json only (unset it, or set http/json)")
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		v := p.str(name, "")
		if v == "" {
			continue
		}
		h, ok := parseOTLPHeaders(v)
		if !ok {
			p.fail(name, "want key=value pairs separated by commas")
			continue
		}
		if t.TracesHeaders == nil {
			t.TracesHeaders = map[string]string{}
		}
		maps.Copy(t.TracesHeaders, h)
	}
	switch strings.ToLower(p.str("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")) {
	case "true":
		t.CaptureContent = true
	case "false":
	default:
		p.fail("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "want true or false")
	}
	return t
}

// parseOTLPHeaders parses the OpenTelemetry exporter headers format:
// key=value pairs separated by commas, values URL-encoded (W3C baggage
// style). It reports false for a pair without "=" or an empty key.
func parseOTLPHeaders(s string) (map[string]string, bool) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, false
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, false
		}
		out[k] = dv
	}
	return out, true
}

func (p *parser) auth() AuthConfig {
	a := AuthConfig{Mode: p.str("AUTH_MODE", AuthDev)}
	switch a.Mode {
	case AuthDev, AuthJWT, AuthIAM:
	default:
		p.fail("AUTH_MODE", "want dev, jwt or iam")
	}
	a.JWKSURL = p.str("JWT_JWKS_URL", "")
	a.Issuer = p.str("JWT_ISSUER", "")
	a.Audience = p.str("JWT_AUDIENCE", "")
	a.AudienceSecret = p.str("JWT_AUDIENCE_SECRET", "")
	if a.Audience != "" && a.AudienceSecret != "" {
		p.fail("JWT_AUDIENCE_SECRET", "set JWT_AUDIENCE or JWT_AUDIENCE_SECRET, not both")
	}
	a.ClockSkew = p.duration("JWT_CLOCK_SKEW", 60*time.Second, 0, 5*time.Minute)
	a.TenantClaim = p.str("JWT_TENANT_CLAIM", "iss")
	trustedDefault := ""
	if a.Mode == AuthDev {
		trustedDefault = "host"
	}
	a.TrustedSubject = p.str("ARTIFACTS_TRUSTED_SUBJECT", trustedDefault)
	a.TrustedTenant = p.str("ARTIFACTS_TRUSTED_TENANT", "")
	if _, _, _, err := a.TrustedPrincipal(); err != nil {
		p.errs = append(p.errs, err) // names its variable
	}
	if a.JWKSURL != "" && !validHTTPURL(a.JWKSURL, true) {
		p.fail("JWT_JWKS_URL", "not an absolute https URL (http only for a loopback host)")
	}
	if a.Mode == AuthJWT {
		if a.JWKSURL == "" {
			p.fail("JWT_JWKS_URL", "required when AUTH_MODE is jwt")
		}
		if a.Issuer == "" {
			p.fail("JWT_ISSUER", "required when AUTH_MODE is jwt")
		}
		if a.Audience == "" && a.AudienceSecret == "" {
			p.fail("JWT_AUDIENCE", "required when AUTH_MODE is jwt (or JWT_AUDIENCE_SECRET)")
		}
	}
	return a
}

func (p *parser) model() ModelConfig {
	m := ModelConfig{Provider: p.str("MODEL_PROVIDER", ProviderEcho)}
	switch m.Provider {
	case ProviderEcho, ProviderBedrock, ProviderOpenAI:
	default:
		p.fail("MODEL_PROVIDER", "want echo, bedrock or openai")
	}
	m.ModelID = p.str("MODEL_ID", "")
	if m.ModelID == "" && (m.Provider == ProviderBedrock || m.Provider == ProviderOpenAI) {
		p.fail("MODEL_ID", "required when MODEL_PROVIDER is bedrock or openai")
	}
	m.EchoDelay = p.duration("ECHO_DELAY", 20*time.Millisecond, 0, 10*time.Second)
	m.EchoChunk = int(p.integer("ECHO_CHUNK_RUNES", 4, 1, 4096))
	m.OpenAIBaseURL = p.str("OPENAI_BASE_URL", "")
	if m.OpenAIBaseURL != "" && !validHTTPURL(m.OpenAIBaseURL, false) {
		p.fail("OPENAI_BASE_URL", "not an absolute http or https URL")
	}
	m.OpenAIAPIKey = p.str("OPENAI_API_KEY", "")
	m.OpenAIAPIKeySecretARN = p.str("OPENAI_API_KEY_SECRET_ARN", "")
	if m.OpenAIAPIKeySecretARN != "" {
		if m.OpenAIAPIKey != "" {
			p.fail("OPENAI_API_KEY_SECRET_ARN", "set OPENAI_API_KEY or OPENAI_API_KEY_SECRET_ARN, not both")
		} else if !validSecretARN(m.OpenAIAPIKeySecretARN) {
			p.fail("OPENAI_API_KEY_SECRET_ARN", "not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)")
		}
	}
	m.SystemPrompt = p.str("SYSTEM_PROMPT", "")
	m.DefinitionID = p.str("DEFINITION_ID", "default")
	if !protocol.IsSafeID(m.DefinitionID) {
		p.fail("DEFINITION_ID", "not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)")
	}
	m.DefinitionRevision = p.integer("DEFINITION_REVISION", 1, 1, 1<<53-1)
	m.Tools, m.ApprovalTools = p.toolNames("MODEL_TOOLS")
	m.MaxSteps = int(p.integer("MODEL_MAX_STEPS", definition.DefaultMaxSteps, 1, MaxModelSteps))
	m.MaxTokens = int(p.integer("MODEL_MAX_TOKENS", 0, 0, MaxModelTokens))
	m.MaxOutputTokens = p.integer("MODEL_MAX_OUTPUT_TOKENS", 0, 0, definition.MaxOutputTokens)
	m.MaxToolCalls = int(p.integer("MODEL_MAX_TOOL_CALLS", 0, 0, definition.MaxToolCalls))
	m.MaxWallTime = p.duration("MODEL_MAX_WALL_TIME", 0, 0, definition.MaxWallTime)
	m.DefinitionsFile = p.str("DEFINITIONS_FILE", "")
	return m
}

func (p *parser) usage() UsageConfig {
	u := UsageConfig{Ledger: true}
	switch strings.ToLower(p.str("USAGE_LEDGER", "on")) {
	case "on":
	case "off":
		u.Ledger = false
	default:
		p.fail("USAGE_LEDGER", "want on or off")
	}
	u.LedgerRetention = p.duration("LEDGER_RETENTION", DefaultLedgerRetention, 24*time.Hour, 10*365*24*time.Hour)
	if s := p.str("QUOTAS", ""); s != "" {
		q, err := definition.ParseQuotas([]byte(s))
		if err != nil {
			// definition.ParseQuotas names the member, never its value.
			p.fail("QUOTAS", strings.TrimPrefix(err.Error(), definition.ErrInvalid.Error()+": "))
		}
		u.Quotas = q
		if !u.Ledger && !q.IsZero() {
			p.fail("QUOTAS", "quotas need the usage ledger (USAGE_LEDGER=on)")
		}
	}
	switch strings.ToLower(p.str("QUOTA_FAIL_MODE", "closed")) {
	case "closed":
	case "open":
		u.QuotaFailOpen = true
	default:
		p.fail("QUOTA_FAIL_MODE", "want closed or open")
	}
	u.QuotaCache = p.duration("QUOTA_CACHE", 5*time.Second, 0, time.Minute)
	return u
}

// approvalSuffix marks a MODEL_TOOLS name whose calls require approval.
const approvalSuffix = ":approval"

// toolNames parses a comma-separated list of tool names (model.ToolSpec
// rule: 1..64 of [A-Za-z0-9_-]), each optionally followed by
// approvalSuffix; empty items are ignored, repeats fail. It returns all
// names and those marked.
func (p *parser) toolNames(name string) (names, approval []string) {
	for _, item := range strings.Split(p.str(name, ""), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		item, marked := strings.CutSuffix(item, approvalSuffix)
		if !validToolName(item) {
			p.fail(name, "want comma-separated tool names of 1..64 [A-Za-z0-9_-], each optionally followed by :approval")
			return nil, nil
		}
		for _, n := range names {
			if n == item {
				p.fail(name, "a tool is listed twice")
				return nil, nil
			}
		}
		names = append(names, item)
		if marked {
			approval = append(approval, item)
		}
	}
	return names, approval
}

func validToolName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// parser accumulates one error per variable.
type parser struct {
	lookup func(string) (string, bool)
	errs   []error
	bad    map[string]bool
}

func (p *parser) fail(name, reason string) {
	if p.bad == nil {
		p.bad = map[string]bool{}
	}
	if p.bad[name] {
		return
	}
	p.bad[name] = true
	p.errs = append(p.errs, fmt.Errorf("%s: %s", name, reason))
}

// ok reports whether name has not failed so far.
func (p *parser) ok(name string) bool { return !p.bad[name] }

// str returns the variable's value, or def when it is unset or empty.
func (p *parser) str(name, def string) string {
	if v, found := p.lookup(name); found && v != "" {
		return v
	}
	return def
}

// duration parses Go duration syntax or plain integer milliseconds, within
// [min, max].
func (p *parser) duration(name string, def, min, max time.Duration) time.Duration {
	s := p.str(name, "")
	if s == "" {
		return def
	}
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > int64(max/time.Millisecond) {
			p.fail(name, fmt.Sprintf("out of range (want %v..%v)", min, max))
			return def
		}
		d = time.Duration(n) * time.Millisecond
	} else if d, err = time.ParseDuration(s); err != nil {
		p.fail(name, `not a duration (want Go syntax such as "30s" or integer milliseconds)`)
		return def
	}
	if d < min || d > max {
		p.fail(name, fmt.Sprintf("out of range (want %v..%v)", min, max))
		return def
	}
	return d
}

// integer parses a base-10 integer within [min, max].
func (p *parser) integer(name string, def, min, max int64) int64 {
	s := p.str(name, "")
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.fail(name, "not an integer")
		return def
	}
	if n < min || n > max {
		p.fail(name, fmt.Sprintf("out of range (want %d..%d)", min, max))
		return def
	}
	return n
}

func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validBucketName reports whether s is an S3 general purpose bucket name
// (3..63 of [a-z0-9.-], a letter or digit at both ends).
func validBucketName(s string) bool {
	if len(s) < 3 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '.' && c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validHTTPURL reports whether s is an absolute http(s) URL with a host.
// With httpsOnly, plain http is accepted only for a loopback host.
func validHTTPURL(s string, httpsOnly bool) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		if !httpsOnly {
			return true
		}
		host := u.Hostname()
		if host == "localhost" {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
