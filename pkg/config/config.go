package config

import (
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// Authentication modes of AUTH_MODE
// (docs/design.md#authentication-and-tenancy), owned by pkg/auth.
const (
	// AuthDev names the principal from "Authorization: Bearer dev.<subject>";
	// local only (pkg/auth refuses it on Lambda).
	AuthDev = auth.ModeDev
	// AuthJWT verifies a bearer JWT against a JWKS URL, issuer and audience.
	AuthJWT = auth.ModeJWT
	// AuthIAM takes the caller from a function URL with AuthType AWS_IAM.
	AuthIAM = auth.ModeIAM
)

// Model providers of MODEL_PROVIDER (docs/design.md#models-tools-definitions),
// owned by pkg/definition.
const (
	// ProviderEcho is the deterministic offline model (pkg/model/echo).
	ProviderEcho = definition.ProviderEcho
	// ProviderBedrock is Amazon Bedrock ConverseStream.
	ProviderBedrock = definition.ProviderBedrock
	// ProviderOpenAI is an OpenAI-compatible streaming chat completions API.
	ProviderOpenAI = definition.ProviderOpenAI
)

// Limits enforced by FromLookup.
const (
	// MaxBodyBytesLimit is the largest MAX_BODY_BYTES: 6 MiB, the Lambda
	// invocation payload limit.
	MaxBodyBytesLimit = 6 << 20
	// MaxTurnTimeout is the largest TURN_TIMEOUT: 15 min, the Lambda
	// function timeout limit.
	MaxTurnTimeout = 15 * time.Minute
	// DefaultTurnTimeout is TURN_TIMEOUT when unset: long enough for a
	// 64 KB answer at 100 tokens/s (about 160 s) with tool calls. A turn
	// is billed for the time it runs, not for its timeout.
	DefaultTurnTimeout = 5 * time.Minute
	// MinCursorSecretBytes is the shortest CURSOR_SECRET, in bytes
	// (chat.CursorCodec needs at least 16).
	MinCursorSecretBytes = 16
	// generatedCursorSecretBytes is the size of a generated cursor secret.
	generatedCursorSecretBytes = 32
)

// Config is the whole process configuration (docs/design.md#configuration).
// Build it with FromEnv or FromLookup, or by hand in tests; the zero value is
// not valid.
type Config struct {
	// TableName is the DynamoDB table (TABLE_NAME, default "turnstream";
	// 3..255 of [A-Za-z0-9_.-]).
	TableName string
	// AttachmentsBucket is the S3 bucket of attachments
	// (ATTACHMENTS_BUCKET, a bucket name: 3..63 of [a-z0-9.-], starting and
	// ending with a letter or digit; docs/attachments.md). Empty: the
	// functions offer no attachments.
	AttachmentsBucket string
	// DynamoDBEndpoint is a DynamoDB API endpoint URL for local runs
	// (DYNAMODB_ENDPOINT, absolute http or https URL); empty means AWS.
	DynamoDBEndpoint string
	// DynamoDBAttemptTimeout bounds one HTTP attempt of a DynamoDB request
	// (DYNAMODB_ATTEMPT_TIMEOUT, default 1 s, >= 10 ms, <= 30 s): a hung
	// connection costs one attempt, and the SDK retries within the budget
	// of what the call serves (a lease, the cleanup reserve).
	DynamoDBAttemptTimeout time.Duration
	// Region is the AWS region (AWS_REGION). It defaults to "us-east-1"
	// only when DynamoDBEndpoint is set; otherwise empty means the SDK's
	// own resolution.
	Region string
	// TurnTimeout bounds one turn request (TURN_TIMEOUT, default 5 min,
	// > 0, <= 15 min); the request's deadline is the earlier of it and the
	// Lambda deadline less CleanupReserve (docs/design.md#the-turn-pipeline).
	TurnTimeout time.Duration
	// CleanupReserve is kept from the Lambda deadline for cleanup
	// (CLEANUP_RESERVE, default 5 s, > 0, < TurnTimeout;
	// docs/design.md#the-turn-pipeline).
	CleanupReserve time.Duration
	// LeaseDuration is the active-turn lease length, renewed every third of it
	// (LEASE_DURATION, default 30 s, >= 1 s, <= 1 h;
	// docs/design.md#the-turn-pipeline).
	LeaseDuration time.Duration
	// ConfirmationTTL is how long a tool call that requires approval can
	// be decided (CONFIRMATION_TTL, default 15 min, >= 1 s, <= 7 days;
	// docs/approvals.md).
	ConfirmationTTL time.Duration
	// SnapshotBytesPerSecond paces streaming snapshots by size
	// (SNAPSHOT_BYTES_PER_SECOND, default 4096, 256..1 GiB): after a
	// snapshot of n bytes the next waits n/SnapshotBytesPerSecond, within
	// SNAPSHOT_INTERVAL..SNAPSHOT_MAX_GAP.
	SnapshotBytesPerSecond int64
	// SnapshotMaxGap is the longest wait between two streaming snapshots
	// while text flows (SNAPSHOT_MAX_GAP, default 2 s or SNAPSHOT_INTERVAL
	// if longer, >= SNAPSHOT_INTERVAL, <= 1 min).
	SnapshotMaxGap time.Duration
	// CheckpointInterval is how often a running turn persists its state
	// at most (CHECKPOINT_INTERVAL, default 1 s; 0 turns durable turns
	// off; else 100 ms..1 min): what resume, a reloaded page and crash
	// recovery read, and how long a stop takes to be seen
	// (docs/durable-turns.md).
	CheckpointInterval time.Duration
	// CheckpointMinChange is the least growth in bytes that a checkpoint
	// between the moments that must not be lost carries
	// (CHECKPOINT_MIN_CHANGE, default 1024, 0..65536; 0 writes every
	// interval): a smaller change waits for more, at most 4 intervals
	// (docs/durable-turns.md).
	CheckpointMinChange int
	// ResumePollInterval is how often a resume stream reads the turn
	// (RESUME_POLL_INTERVAL, default 250 ms, 10 ms..500 ms).
	ResumePollInterval time.Duration
	// MaxQueuedTurns is how many turns a session may hold queued
	// (MAX_QUEUED_TURNS, default 4, 1..16; docs/multitask.md).
	MaxQueuedTurns int
	// QueuedTurnTTL is how long a queued turn may wait to start
	// (QUEUED_TURN_TTL, default 10 min, 1 s..24 h; docs/multitask.md).
	QueuedTurnTTL time.Duration
	// SnapshotInterval is the minimum time between streaming snapshots
	// (SNAPSHOT_INTERVAL, default 50 ms, >= 1 ms, <= 10 s;
	// docs/design.md#snapshots).
	SnapshotInterval time.Duration
	// MaxBodyBytes caps a request body in bytes (MAX_BODY_BYTES, default
	// 65536, 1..MaxBodyBytesLimit; docs/design.md#the-turn-pipeline).
	MaxBodyBytes int64
	// CursorSecret is the HMAC key of history page cursors (CURSOR_SECRET,
	// its bytes as given, at least MinCursorSecretBytes). When unset a
	// random 32-byte key is generated for the process and
	// CursorSecretGenerated is true: cursors then break across instances,
	// so mains should warn, and the history function on Lambda should
	// refuse to start (see RequireCursorSecret).
	CursorSecret []byte
	// CursorSecretGenerated reports that CURSOR_SECRET was unset and
	// CursorSecret was generated for this process.
	CursorSecretGenerated bool
	// CursorSecretARN is the ARN of an AWS Secrets Manager secret whose
	// SecretString is the cursor key (CURSOR_SECRET_ARN,
	// arn:<partition>:secretsmanager:...; excludes CURSOR_SECRET). It keeps
	// the key out of the function's environment, where anyone allowed
	// lambda:GetFunctionConfiguration could read it. FromLookup does no
	// I/O: the main that serves cursors (functions/history) reads the
	// secret at start and installs it with SetCursorSecret; until then
	// CursorSecret is a generated key as when no secret is configured.
	CursorSecretARN string
	// LambdaFunctionName is AWS_LAMBDA_FUNCTION_NAME, set by the Lambda
	// runtime; empty when not running on Lambda.
	LambdaFunctionName string
	// SessionRetention is how long an idle session is kept before DynamoDB TTL
	// may delete it (SESSION_RETENTION; 0, the default, keeps sessions
	// forever; otherwise >= 1 min, since TTL deletion is lazy and a shorter
	// retention would delete live sessions;
	// docs/design.md#storage-one-dynamodb-table).
	SessionRetention time.Duration
	// LogLevel is the slog level (LOG_LEVEL: debug | info | warn | error,
	// case-insensitive, default info; docs/design.md#configuration).
	LogLevel slog.Level
	// Auth configures pkg/auth (docs/design.md#authentication-and-tenancy).
	Auth AuthConfig
	// Model configures the model provider and the default definition
	// (docs/design.md#models-tools-definitions).
	Model ModelConfig
	// Telemetry configures metrics and traces (docs/operations.md):
	// TELEMETRY_METRICS (emf | off; emf by default on Lambda, off
	// elsewhere), TELEMETRY_NAMESPACE (default Turnstream),
	// OTEL_SERVICE_NAME (default turnstream), the OTLP traces endpoint
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces: absolute http(s) URLs;
	// unset, tracing is off), its headers (OTEL_EXPORTER_OTLP_HEADERS,
	// OTEL_EXPORTER_OTLP_TRACES_HEADERS: key=value pairs separated by
	// commas, values URL-encoded), the protocol (OTEL_EXPORTER_OTLP_PROTOCOL,
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unset or http/json, the only one
	// turnstream sends) and OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
	// (true | false, default false).
	Telemetry telemetry.Config
	// Usage configures the usage ledger and quotas (docs/quotas.md).
	Usage UsageConfig
	// Page configures the chat page where a function serves it
	// (docs/chat-page.md).
	Page PageConfig
}

// UsageConfig configures the usage ledger and quotas (docs/quotas.md).
type UsageConfig struct {
	// Ledger is whether every finished turn is counted in the usage
	// ledger (USAGE_LEDGER: on, the default, or off). Quotas need it:
	// setting QUOTAS with the ledger off is an error.
	Ledger bool
	// LedgerRetention is how long a month's ledger records are kept after
	// the month ends (LEDGER_RETENTION, default 9600h = 400 days, 24h..
	// 87600h = 10 years); DynamoDB's TTL deletes them after.
	LedgerRetention time.Duration
	// Quotas are the deployment-wide default quotas (QUOTAS, a JSON
	// object {"principal": {...}, "tenant": {...}} with the members
	// turnsPerMinute, tokensPerDay, tokensPerMonth, concurrentSessions;
	// definition.ParseQuotas); a definition's own quotas apply over them.
	// Empty: no limit.
	Quotas chat.Quotas
	// QuotaFailOpen is what a quota check that cannot read the ledger
	// does (QUOTA_FAIL_MODE: closed, the default, refuses the turn with
	// 503 QUOTA_UNAVAILABLE; open lets it run unchecked and logs it).
	QuotaFailOpen bool
	// QuotaCache is how long a tenant's figures (a sum over its
	// principals) are reused by the quota checks of one process, and how
	// old a principal's figures may be before a check before a model
	// call reads them again (QUOTA_CACHE, default 5s, 0..1m; 0 reads them
	// every time).
	QuotaCache time.Duration
}

// AuthConfig configures pkg/auth (docs/design.md#authentication-and-tenancy):
// it is auth.Config, which FromLookup fills from AUTH_MODE, JWT_JWKS_URL,
// JWT_ISSUER, JWT_AUDIENCE, JWT_CLOCK_SKEW, JWT_TENANT_CLAIM,
// ARTIFACTS_TRUSTED_SUBJECT and ARTIFACTS_TRUSTED_TENANT.
type AuthConfig = auth.Config

// DevTenant is the tenant of every dev-mode principal (auth.DevTenant).
const DevTenant = auth.DevTenant

// ModelConfig configures the model provider and the default definition
// (docs/design.md#models-tools-definitions).
type ModelConfig struct {
	// Provider is ProviderEcho, ProviderBedrock or ProviderOpenAI
	// (MODEL_PROVIDER, default "echo").
	Provider string
	// ModelID is the provider's model id (MODEL_ID); required for bedrock
	// and openai.
	ModelID string
	// EchoDelay is the echo model's pause between chunks (ECHO_DELAY,
	// default 20 ms, 0..10 s; 0 means no pause).
	EchoDelay time.Duration
	// EchoChunk is the echo model's chunk size in runes (ECHO_CHUNK_RUNES,
	// default 4, 1..4096).
	EchoChunk int
	// OpenAIBaseURL is the OpenAI-compatible API base URL (OPENAI_BASE_URL,
	// absolute http or https URL); empty means the provider's default.
	OpenAIBaseURL string
	// OpenAIAPIKey is the API key (OPENAI_API_KEY); may be empty for local
	// servers that need none. Never log it.
	OpenAIAPIKey string
	// OpenAIAPIKeySecretARN is the ARN of an AWS Secrets Manager secret
	// whose SecretString is the API key (OPENAI_API_KEY_SECRET_ARN,
	// arn:<partition>:secretsmanager:<region>:<account>:secret:<name>; not
	// with OPENAI_API_KEY): the turn function reads it once at start, so
	// that the key is never in its environment (docs/providers.md).
	OpenAIAPIKeySecretARN string
	// SystemPrompt is the default definition's system prompt
	// (SYSTEM_PROMPT, may be empty).
	SystemPrompt string
	// DefinitionID is the default definition's id (DEFINITION_ID, a SafeId,
	// default "default").
	DefinitionID string
	// DefinitionRevision is the default definition's revision
	// (DEFINITION_REVISION, integer >= 1, default 1).
	DefinitionRevision int64
	// Tools are the default definition's tool names (MODEL_TOOLS, comma
	// separated, spaces around names ignored, each 1..64 of
	// [A-Za-z0-9_-], no repeats; default none). pkg/definition checks
	// that each is registered. A name followed by ":approval"
	// ("workspace_note_delete:approval") is a tool that requires the
	// owner's approval before it runs; it is listed in Tools and in
	// ApprovalTools.
	Tools []string
	// ApprovalTools are the tools of Tools marked ":approval" in
	// MODEL_TOOLS, in order.
	ApprovalTools []string
	// MaxSteps caps the model calls of one turn, each tool round trip being
	// one more call (MODEL_MAX_STEPS, default 8, 1..64;
	// docs/design.md#models-tools-definitions).
	MaxSteps int
	// MaxTokens caps one model call's completion in tokens
	// (MODEL_MAX_TOKENS, default 0 = the provider's default,
	// 0..1,000,000).
	MaxTokens int
	// MaxOutputTokens, MaxToolCalls and MaxWallTime are the default
	// definition's per-turn budgets (MODEL_MAX_OUTPUT_TOKENS 0..100,000,000,
	// MODEL_MAX_TOOL_CALLS 0..10,000, MODEL_MAX_WALL_TIME 0..15m; 0, the
	// default, sets none; definition.Limits).
	MaxOutputTokens int64
	MaxToolCalls    int
	MaxWallTime     time.Duration
	// DefinitionsFile is the path of a JSON file of definitions
	// (DEFINITIONS_FILE; see pkg/definition). When set, definitions come
	// from the file and DefinitionID names the one new sessions get; the
	// other default-definition fields (SYSTEM_PROMPT, MODEL_ID,
	// DEFINITION_REVISION, MODEL_TOOLS, MODEL_MAX_STEPS, MODEL_MAX_TOKENS,
	// MODEL_MAX_OUTPUT_TOKENS, MODEL_MAX_TOOL_CALLS, MODEL_MAX_WALL_TIME)
	// are not used for definitions.
	DefinitionsFile string
}

// Limits of the model settings, owned by pkg/definition.
const (
	// MaxModelSteps is the largest MODEL_MAX_STEPS (definition.MaxSteps).
	MaxModelSteps = definition.MaxSteps
	// MaxModelTokens is the largest MODEL_MAX_TOKENS (definition.MaxTokens).
	MaxModelTokens = definition.MaxTokens
)

// Definitions returns where the process's definitions come from, for
// definition.Load: the DEFINITIONS_FILE, or the single definition of the
// other fields (DEFINITION_ID, DEFINITION_REVISION, SYSTEM_PROMPT,
// MODEL_PROVIDER, MODEL_ID, MODEL_TOOLS, MODEL_MAX_STEPS,
// MODEL_MAX_TOKENS, MODEL_MAX_OUTPUT_TOKENS, MODEL_MAX_TOOL_CALLS,
// MODEL_MAX_WALL_TIME). Config.Definitions adds the default quotas.
func (m ModelConfig) Definitions() definition.Config {
	return definition.Config{
		File:      m.DefinitionsFile,
		DefaultID: m.DefinitionID,
		Single: definition.Definition{
			ID: m.DefinitionID, Revision: m.DefinitionRevision, SystemPrompt: m.SystemPrompt,
			Provider: m.Provider, ModelID: m.ModelID, Tools: m.Tools, ApprovalTools: m.ApprovalTools,
			Limits: definition.Limits{MaxSteps: m.MaxSteps, MaxTokens: m.MaxTokens,
				MaxOutputTokens: m.MaxOutputTokens, MaxToolCalls: m.MaxToolCalls, MaxWallTime: m.MaxWallTime},
		},
	}
}

// Definitions returns c.Model.Definitions() over the deployment-wide
// default quotas (QUOTAS): what a process that checks quotas loads.
func (c Config) Definitions() definition.Config {
	d := c.Model.Definitions()
	d.DefaultQuotas = c.Usage.Quotas
	return d
}

// Variables is the sorted list of every variable FromLookup reads that a
// deployment sets (a SAM template test checks the template sets each one).
// RuntimeVariables holds the two that the Lambda runtime sets itself.
var Variables = []string{
	"ARTIFACTS_TRUSTED_SUBJECT",
	"ARTIFACTS_TRUSTED_TENANT",
	"ATTACHMENTS_BUCKET",
	"AUTH_MODE",
	"CHAT_PAGE",
	"CHAT_PAGE_OIDC_AUTHORITY",
	"CHAT_PAGE_OIDC_CLIENT_ID",
	"CHAT_PAGE_OIDC_LOGOUT_URL",
	"CHAT_PAGE_OIDC_ORIGINS",
	"CHAT_PAGE_OIDC_SCOPE",
	"CHAT_PAGE_UPLOADS_PATH",
	"CHECKPOINT_INTERVAL",
	"CHECKPOINT_MIN_CHANGE",
	"CLEANUP_RESERVE",
	"CONFIRMATION_TTL",
	"CURSOR_SECRET",
	"CURSOR_SECRET_ARN",
	"DEFINITIONS_FILE",
	"DEFINITION_ID",
	"DEFINITION_REVISION",
	"DYNAMODB_ATTEMPT_TIMEOUT",
	"DYNAMODB_ENDPOINT",
	"ECHO_CHUNK_RUNES",
	"ECHO_DELAY",
	"JWT_AUDIENCE",
	"JWT_AUDIENCE_SECRET",
	"JWT_CLOCK_SKEW",
	"JWT_ISSUER",
	"JWT_JWKS_URL",
	"JWT_TENANT_CLAIM",
	"LEASE_DURATION",
	"LEDGER_RETENTION",
	"LOG_LEVEL",
	"MAX_BODY_BYTES",
	"MAX_QUEUED_TURNS",
	"MODEL_ID",
	"MODEL_MAX_OUTPUT_TOKENS",
	"MODEL_MAX_STEPS",
	"MODEL_MAX_TOKENS",
	"MODEL_MAX_TOOL_CALLS",
	"MODEL_MAX_WALL_TIME",
	"MODEL_PROVIDER",
	"MODEL_TOOLS",
	"OPENAI_API_KEY",
	"OPENAI_API_KEY_SECRET_ARN",
	"OPENAI_BASE_URL",
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
	"OTEL_SERVICE_NAME",
	"QUEUED_TURN_TTL",
	"QUOTAS",
	"QUOTA_CACHE",
	"QUOTA_FAIL_MODE",
	"RESUME_POLL_INTERVAL",
	"SESSION_RETENTION",
	"SNAPSHOT_BYTES_PER_SECOND",
	"SNAPSHOT_INTERVAL",
	"SNAPSHOT_MAX_GAP",
	"SYSTEM_PROMPT",
	"TABLE_NAME",
	"TELEMETRY_METRICS",
	"TELEMETRY_NAMESPACE",
	"TURN_TIMEOUT",
	"USAGE_LEDGER",
}

// OptionalVariables is the sorted list of variables FromLookup reads
// that a deployment may set but the template does not: the standard
// OpenTelemetry exporter settings an operator adds for a collector of
// their own (docs/operations.md).
var OptionalVariables = []string{
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
}

// RuntimeVariables is the sorted list of variables FromLookup reads that
// the Lambda runtime sets (reserved: a template must not set them).
var RuntimeVariables = []string{
	"AWS_LAMBDA_FUNCTION_NAME",
	"AWS_REGION",
}

// ErrCursorSecretRequired is returned by RequireCursorSecret on Lambda when
// neither CURSOR_SECRET nor an installed CURSOR_SECRET_ARN secret gives the
// cursor key.
var ErrCursorSecretRequired = errors.New("CURSOR_SECRET or CURSOR_SECRET_ARN: required on Lambda (at least 16 bytes)")

// ErrCursorSecretShort is returned by SetCursorSecret for a key shorter
// than MinCursorSecretBytes.
var ErrCursorSecretShort = errors.New("CURSOR_SECRET_ARN: the secret's SecretString is shorter than 16 bytes")

var fromEnv = sync.OnceValues(func() (Config, error) { return FromLookup(os.LookupEnv) })

// FromEnv parses the process environment on its first call and returns
// that same Config (and error) on every later call. See FromLookup.
func FromEnv() (Config, error) {
	c, err := fromEnv()
	// Each caller gets its own copy of the secret slice.
	c.CursorSecret = append([]byte(nil), c.CursorSecret...)
	return c, err
}

// FromLookup parses configuration from lookup (os.LookupEnv in
// production), applies defaults and validates it. A variable that is set to
// the empty string counts as unset. The error, if any, joins one error per
// variable at fault (errors.Join), each starting with the variable's name,
// in the order of Variables; it never contains a variable's value.
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	p := parser{lookup: lookup}
	var c Config

	c.TableName = p.str("TABLE_NAME", "turnstream")
	if !validTableName(c.TableName) {
		p.fail("TABLE_NAME", "want 3..255 characters of [A-Za-z0-9_.-]")
	}
	c.AttachmentsBucket = p.str("ATTACHMENTS_BUCKET", "")
	if c.AttachmentsBucket != "" && !validBucketName(c.AttachmentsBucket) {
		p.fail("ATTACHMENTS_BUCKET", "want 3..63 characters of [a-z0-9.-], starting and ending with a letter or digit")
	}
	c.DynamoDBEndpoint = p.str("DYNAMODB_ENDPOINT", "")
	if c.DynamoDBEndpoint != "" && !validHTTPURL(c.DynamoDBEndpoint, false) {
		p.fail("DYNAMODB_ENDPOINT", "not an absolute http or https URL")
	}
	c.DynamoDBAttemptTimeout = p.duration("DYNAMODB_ATTEMPT_TIMEOUT", time.Second, 10*time.Millisecond, 30*time.Second)
	regionDefault := ""
	if c.DynamoDBEndpoint != "" {
		regionDefault = "us-east-1"
	}
	c.Region = p.str("AWS_REGION", regionDefault)
	c.LambdaFunctionName = p.str("AWS_LAMBDA_FUNCTION_NAME", "")

	c.TurnTimeout = p.duration("TURN_TIMEOUT", DefaultTurnTimeout, time.Millisecond, MaxTurnTimeout)
	c.CleanupReserve = p.duration("CLEANUP_RESERVE", 5*time.Second, time.Millisecond, MaxTurnTimeout)
	if p.ok("TURN_TIMEOUT") && p.ok("CLEANUP_RESERVE") && c.CleanupReserve >= c.TurnTimeout {
		p.fail("CLEANUP_RESERVE", "must be less than TURN_TIMEOUT")
	}
	c.LeaseDuration = p.duration("LEASE_DURATION", 30*time.Second, time.Second, time.Hour)
	c.ConfirmationTTL = p.duration("CONFIRMATION_TTL", 15*time.Minute, time.Second, 7*24*time.Hour)
	c.SnapshotInterval = p.duration("SNAPSHOT_INTERVAL", 50*time.Millisecond, time.Millisecond, 10*time.Second)
	c.SnapshotBytesPerSecond = p.integer("SNAPSHOT_BYTES_PER_SECOND", 4096, 256, 1<<30)
	c.SnapshotMaxGap = p.duration("SNAPSHOT_MAX_GAP", max(2*time.Second, c.SnapshotInterval), time.Millisecond, time.Minute)
	if p.ok("SNAPSHOT_INTERVAL") && p.ok("SNAPSHOT_MAX_GAP") && c.SnapshotMaxGap < c.SnapshotInterval {
		p.fail("SNAPSHOT_MAX_GAP", "below SNAPSHOT_INTERVAL")
	}
	c.CheckpointInterval = p.duration("CHECKPOINT_INTERVAL", time.Second, 0, time.Minute)
	if c.CheckpointInterval != 0 && c.CheckpointInterval < 100*time.Millisecond {
		p.fail("CHECKPOINT_INTERVAL", "out of range (want 0 to turn checkpoints off, or 100ms..1m0s)")
	}
	c.CheckpointMinChange = int(p.integer("CHECKPOINT_MIN_CHANGE", DefaultCheckpointMinChange, 0, 64<<10))
	c.ResumePollInterval = p.duration("RESUME_POLL_INTERVAL", 250*time.Millisecond, 10*time.Millisecond, 500*time.Millisecond)
	c.MaxBodyBytes = p.integer("MAX_BODY_BYTES", httpedge.DefaultMaxBodyBytes, 1, MaxBodyBytesLimit)
	c.MaxQueuedTurns = int(p.integer("MAX_QUEUED_TURNS", chat.DefaultMaxQueuedTurns, 1, chat.MaxQueuedTurnsLimit))
	c.QueuedTurnTTL = p.duration("QUEUED_TURN_TTL", chat.DefaultQueuedTurnTTL, time.Second, 24*time.Hour)

	if s := p.str("CURSOR_SECRET", ""); s != "" {
		if len(s) < MinCursorSecretBytes {
			p.fail("CURSOR_SECRET", "want at least 16 bytes")
		}
		c.CursorSecret = []byte(s)
	} else {
		c.CursorSecret = make([]byte, generatedCursorSecretBytes)
		if _, err := rand.Read(c.CursorSecret); err != nil {
			p.fail("CURSOR_SECRET", "unset, and generating one failed")
		}
		c.CursorSecretGenerated = true
	}

	c.CursorSecretARN = p.str("CURSOR_SECRET_ARN", "")
	if c.CursorSecretARN != "" {
		if !c.CursorSecretGenerated {
			p.fail("CURSOR_SECRET_ARN", "set CURSOR_SECRET or CURSOR_SECRET_ARN, not both")
		} else if !validSecretARN(c.CursorSecretARN) {
			p.fail("CURSOR_SECRET_ARN", "not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)")
		}
	}

	c.SessionRetention = p.duration("SESSION_RETENTION", 0, 0, 100*365*24*time.Hour)
	if c.SessionRetention != 0 && c.SessionRetention < time.Minute {
		p.fail("SESSION_RETENTION", "want 0 (keep) or at least 1m")
	}

	switch strings.ToLower(p.str("LOG_LEVEL", "info")) {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		p.fail("LOG_LEVEL", "want debug, info, warn or error")
	}

	c.Auth = p.auth()
	c.Model = p.model()
	c.Telemetry = p.telemetry(c.OnLambda())
	c.Usage = p.usage()
	c.Page = p.page(c.Auth)

	if len(p.errs) > 0 {
		return Config{}, errors.Join(p.errs...)
	}
	return c, nil
}

// DefaultLedgerRetention is LEDGER_RETENTION's default (chat's).
const DefaultLedgerRetention = chat.DefaultLedgerRetention

// DefaultCheckpointMinChange is CHECKPOINT_MIN_CHANGE's default, in
// bytes: a write unit's worth of text.
const DefaultCheckpointMinChange = 1024

// OnLambda reports whether the process runs on AWS Lambda
// (AWS_LAMBDA_FUNCTION_NAME is set).
func (c Config) OnLambda() bool { return c.LambdaFunctionName != "" }

// RequireCursorSecret returns ErrCursorSecretRequired when the process runs
// on Lambda and CURSOR_SECRET was unset, nil otherwise. The history
// function's main calls it: its cursors must verify on every instance.
func (c Config) RequireCursorSecret() error {
	if c.OnLambda() && c.CursorSecretGenerated {
		return ErrCursorSecretRequired
	}
	return nil
}

// SetCursorSecret installs secret, read from the CURSOR_SECRET_ARN secret,
// as CursorSecret (a copy) and clears CursorSecretGenerated. It returns
// ErrCursorSecretShort, changing nothing, when secret is shorter than
// MinCursorSecretBytes.
func (c *Config) SetCursorSecret(secret []byte) error {
	if len(secret) < MinCursorSecretBytes {
		return ErrCursorSecretShort
	}
	c.CursorSecret = append([]byte(nil), secret...)
	c.CursorSecretGenerated = false
	return nil
}

// validSecretARN reports whether s looks like a Secrets Manager secret ARN:
// arn:<partition>:secretsmanager:<region>:<account>:secret:<name>.
func validSecretARN(s string) bool {
	parts := strings.SplitN(s, ":", 7)
	return len(parts) == 7 && parts[0] == "arn" && parts[1] != "" && parts[2] == "secretsmanager" &&
		parts[3] != "" && parts[4] != "" && parts[5] == "secret" && parts[6] != ""
}
