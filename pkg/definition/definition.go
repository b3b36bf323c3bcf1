// Package definition resolves the definition a session runs with: id,
// revision, system prompt, provider, model id, tools and limits
// (docs/design.md#models-tools-definitions), from configuration only.
//
// Definitions come from a JSON file (Config.File, DEFINITIONS_FILE in
// pkg/config; see Parse) or, without one, from one definition given
// field by field (Config.Single, which pkg/config builds from
// DEFINITION_ID, DEFINITION_REVISION, SYSTEM_PROMPT, MODEL_PROVIDER,
// MODEL_ID, MODEL_TOOLS, MODEL_MAX_STEPS and MODEL_MAX_TOKENS). They are
// loaded once per process (Load). This package owns the definition's
// rules and limits; pkg/config refers to them.
//
// A session keeps its definition id for life (the session envelope's
// definitionId, docs/protocol.md#the-session-envelope); a new session gets the
// default definition (config DEFINITION_ID). Every turn resolves the session's
// id again and runs the definition's current revision, so a deployment that
// bumps a revision applies it to the next turn of every session; the turn
// records the revision it ran in the session envelope.
package definition

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Model providers a definition may name (Definition.Provider; pkg/config
// MODEL_PROVIDER).
const (
	// ProviderEcho is the deterministic offline model (pkg/model/echo).
	ProviderEcho = "echo"
	// ProviderBedrock is Amazon Bedrock ConverseStream.
	ProviderBedrock = "bedrock"
	// ProviderOpenAI is an OpenAI-compatible streaming chat completions API.
	ProviderOpenAI = "openai"
)

// MaxTitleModelIDBytes bounds Definition.TitleModelID.
const MaxTitleModelIDBytes = 256

// Multitask policies: what a submit that finds its session busy does
// (docs/multitask.md; the submit's api.MultitaskHeader, or the
// definition's default). The wire names are pkg/api's.
const (
	// MultitaskReject answers 409 SESSION_BUSY: AgentsKit's behaviour.
	MultitaskReject = api.MultitaskReject
	// MultitaskEnqueue stores the turn to run after the running one.
	MultitaskEnqueue = api.MultitaskEnqueue
	// MultitaskInterrupt stops the running turn and runs the new one in
	// its place.
	MultitaskInterrupt = api.MultitaskInterrupt
	// MultitaskRollback interrupts, and supersedes the interrupted turn.
	MultitaskRollback = api.MultitaskRollback
)

// MultitaskPolicies are every policy, in the order capabilities list them
// (api.MultitaskPolicies).
var MultitaskPolicies = api.MultitaskPolicies

// Multitask is a definition's multitask policy: the one used when a
// submit names none, and those a submit may name.
type Multitask struct {
	// Default is one of Allowed; empty in a Definition built in code means
	// MultitaskReject.
	Default string
	// Allowed are the policies a submit may name; empty in a Definition
	// built in code means all of MultitaskPolicies. MultitaskReject is
	// always allowed.
	Allowed []string
}

// Policies returns m with its defaults applied.
func (m Multitask) Policies() (def string, allowed []string) {
	def, allowed = m.Default, m.Allowed
	if def == "" {
		def = MultitaskReject
	}
	if len(allowed) == 0 {
		allowed = MultitaskPolicies
	}
	return def, allowed
}

// Limits of a definition.
const (
	// DefaultMaxSteps is limits.maxSteps when absent.
	DefaultMaxSteps = 8
	// MaxSteps is the largest limits.maxSteps: at most 64 model calls in
	// one turn.
	MaxSteps = 64
	// MaxTokens is the largest limits.maxTokens: 1,000,000 tokens of one
	// model call's completion.
	MaxTokens = 1_000_000
	// MaxRevision is the largest revision: 2^53-1
	// (docs/protocol.md#the-turn-event-envelope integers).
	MaxRevision = 1<<53 - 1
	// MaxDefinitions bounds the definitions of one file.
	MaxDefinitions = 1_000
	// DefaultContextTurns is limits.contextTurns when absent, and
	// MaxContextTurns its largest value.
	DefaultContextTurns = 50
	MaxContextTurns     = 1_000
	// MaxContextTokens is the largest limits.contextTokens.
	MaxContextTokens = 10_000_000
	// MaxOutputTokens is the largest limits.maxOutputTokens: output
	// tokens across one turn's model calls.
	MaxOutputTokens = 100_000_000
	// MaxToolCalls is the largest limits.maxToolCalls.
	MaxToolCalls = 10_000
	// MaxWallTime is the largest limits.maxWallTimeMs: 15 minutes, a
	// Lambda invocation's limit.
	MaxWallTime = 15 * time.Minute
)

// DefaultContextTokens is limits.contextTokens when absent, per provider:
// the estimated tokens of earlier turns a turn sends, well inside the
// context windows of the models the provider serves (the rest of the
// window is the system prompt, the new input, tool results and the
// answer). The echo model has no window: its budget only bounds the load.
var DefaultContextTokens = map[string]int{
	ProviderEcho:    100_000,
	ProviderBedrock: 100_000,
	ProviderOpenAI:  60_000,
}

// Errors.
var (
	// ErrUnknownDefinition is returned by Resolve for an id that no
	// definition has (for example a session whose definition was removed
	// from the configuration).
	ErrUnknownDefinition = errors.New("definition: unknown definition id")
	// ErrInvalid is wrapped by Parse, New and Load; the wrapping
	// error names the field at fault (for example
	// "definitions[2].modelId"), never its value.
	ErrInvalid = errors.New("definition: invalid definitions")
)

// Definition is what a session's turns run with.
type Definition struct {
	// ID is a SafeId (docs/protocol.md#the-turn-event-envelope), unique among
	// definitions.
	ID string
	// Revision is an integer 1..MaxRevision.
	Revision int64
	// SystemPrompt is model.Request.System; may be empty.
	SystemPrompt string
	// Provider is ProviderEcho, ProviderBedrock or ProviderOpenAI.
	Provider string
	// ModelID is model.Request.ModelID; required for bedrock and openai.
	ModelID string
	// TitleModelID, when set, is the model id (of the same provider) that
	// writes a session's title when its first turn completes
	// (docs/conversations.md#titles): one short call after the turn's
	// answer was saved, at most MaxTitleModelIDBytes bytes. Empty: the
	// title is cut from the first user message, with no model call.
	TitleModelID string
	// Tools are the tool names offered to the model (tool.Registry.Specs),
	// in order, no repeats; empty means none.
	Tools []string
	// ApprovalTools are the tools of Tools whose calls wait for the
	// session owner's approval before they run (docs/approvals.md); no
	// repeats; each name must also be a SafeId (it is the confirmation's
	// action).
	ApprovalTools []string
	// Limits bound one turn.
	Limits Limits
	// Multitask is what a submit that finds the session busy does.
	Multitask Multitask
	// NoPromptCache turns prompt caching off (the file's "promptCache":
	// false). By default each model call asks the provider to cache the
	// request's prefix where the model supports it
	// (model.Request.PromptCache; docs/providers.md#prompt-caching).
	NoPromptCache bool
	// Reasoning is the model's reasoning (the file's "reasoning"); nil
	// when the definition says nothing, and reasoning the model produces
	// on its own is streamed and kept (docs/reasoning.md).
	Reasoning *Reasoning
	// MCPServers are remote tool servers whose tools the definition
	// offers beside Tools (the file's "mcpServers"; docs/mcp.md); at most
	// MaxMCPServers.
	MCPServers []MCPServer
	// Quotas are the definition's quotas on its sessions' principals and
	// tenants (docs/quotas.md; the file's "quotas"): each limit set here
	// replaces the deployment-wide default's (Resolver.Quotas); zero
	// leaves it.
	Quotas chat.Quotas
}

// Reasoning is a definition's reasoning settings (docs/reasoning.md).
type Reasoning struct {
	// BudgetTokens asks a model that takes a thinking budget (Bedrock's
	// Claude models) to reason for up to that many tokens per model call
	// (model.Request.Reasoning): 0 asks nothing, else
	// model.MinReasoningBudget (1,024) and up, below Limits.MaxTokens,
	// which must then be set, since the reasoning counts in each call's
	// completion. Models that reason by themselves ignore it.
	BudgetTokens int
	// Hidden keeps the reasoning from clients (the file's "visible":
	// false): it is still stored, and sent back to the model where the
	// provider needs it, but no snapshot, resume, history page or AG-UI
	// event carries it.
	Hidden bool
}

// Limits bound one turn of a definition.
type Limits struct {
	// MaxSteps caps the model calls of one turn: the first call plus one
	// per tool round trip; 1..MaxSteps.
	MaxSteps int
	// MaxTokens is model.Request.MaxTokens of each call; 0 means the
	// provider's default; 0..MaxTokens.
	MaxTokens int
	// ContextTurns is how many of the newest earlier turns a turn loads
	// and may send to the model (1..MaxContextTurns; 0 in a Definition
	// built in code means DefaultContextTurns). Loading reads only those.
	ContextTurns int
	// ContextTokens caps the estimated tokens (UTF-8 bytes / 4) of the
	// earlier turns sent: the oldest whole turns beyond it are left out
	// (1..MaxContextTokens; 0 means DefaultContextTokens of the provider).
	// The system prompt and the new input are always sent.
	ContextTokens int
	// MaxOutputTokens caps the output tokens of one turn, across its
	// model calls (1..MaxOutputTokens; 0: none): each call's completion is
	// capped at what is left, and a turn that reaches it ends with
	// LIMIT_EXCEEDED after the call (docs/quotas.md).
	MaxOutputTokens int64
	// MaxToolCalls caps the tool calls one turn may ask for (1..MaxToolCalls;
	// 0: none): the calls past it never run, and the turn ends with
	// LIMIT_EXCEEDED after the model call that asked for them.
	MaxToolCalls int
	// MaxWallTime caps one turn's duration from its claim (1 ms..
	// MaxWallTime; 0: none, the request's deadline only): the turn is
	// stopped there and ends with LIMIT_EXCEEDED, its partial answer kept.
	MaxWallTime time.Duration
}

// Budgets reports whether l sets a per-turn budget beside maxSteps
// (MaxOutputTokens, MaxToolCalls, MaxWallTime).
func (l Limits) Budgets() bool {
	return l.MaxOutputTokens > 0 || l.MaxToolCalls > 0 || l.MaxWallTime > 0
}

// Context returns the effective context budget of d: turns and estimated
// tokens, defaults applied.
func (d Definition) Context() (turns, tokens int) {
	turns, tokens = d.Limits.ContextTurns, d.Limits.ContextTokens
	if turns == 0 {
		turns = DefaultContextTurns
	}
	if tokens == 0 {
		tokens = DefaultContextTokens[d.Provider]
		if tokens == 0 {
			tokens = 60_000
		}
	}
	return turns, tokens
}

// Resolver holds the process's definitions. It is immutable and safe for
// concurrent use.
type Resolver struct {
	byID      map[string]Definition
	order     []string
	defaultID string
	// quotas is the deployment-wide default (Config.DefaultQuotas).
	quotas chat.Quotas
}

// fileDefinition is one entry of a definitions file. Pointers tell a
// missing member from a zero value.
type fileDefinition struct {
	ID           *string  `json:"id"`
	Revision     *int64   `json:"revision"`
	SystemPrompt *string  `json:"systemPrompt"`
	Provider     *string  `json:"provider"`
	ModelID      *string  `json:"modelId"`
	TitleModelID *string  `json:"titleModel"`
	Tools        []string `json:"tools"`
	// ApprovalTools is the file's "approvalTools": names of tools that
	// require approval.
	ApprovalTools []string `json:"approvalTools"`
	// PromptCache is the file's "promptCache": false turns prompt caching
	// off (Definition.NoPromptCache); absent or true leaves it on.
	PromptCache *bool `json:"promptCache"`
	// Reasoning is the file's "reasoning": {budgetTokens?, visible?}.
	Reasoning *struct {
		BudgetTokens *int  `json:"budgetTokens"`
		Visible      *bool `json:"visible"`
	} `json:"reasoning"`
	Limits *struct {
		MaxSteps        *int   `json:"maxSteps"`
		MaxTokens       *int   `json:"maxTokens"`
		ContextTurns    *int   `json:"contextTurns"`
		ContextTokens   *int   `json:"contextTokens"`
		MaxOutputTokens *int64 `json:"maxOutputTokens"`
		MaxToolCalls    *int   `json:"maxToolCalls"`
		MaxWallTimeMs   *int64 `json:"maxWallTimeMs"`
	} `json:"limits"`
	Multitask *struct {
		Default *string  `json:"default"`
		Allowed []string `json:"allowed"`
	} `json:"multitask"`
	Quotas *fileQuotas `json:"quotas"`
	// MCPServers is the file's "mcpServers" (parseMCPServers).
	MCPServers []fileMCPServer `json:"mcpServers"`
}

// fileQuotas is the "quotas" object of a definition, and the QUOTAS
// variable's document (ParseQuotas).
type fileQuotas struct {
	Principal *fileQuotaLimits `json:"principal"`
	Tenant    *fileQuotaLimits `json:"tenant"`
}

// fileQuotaLimits is one scope's quotas; an absent member is unlimited
// (or, in a definition, the deployment-wide default).
type fileQuotaLimits struct {
	TurnsPerMinute     *int64 `json:"turnsPerMinute"`
	TokensPerDay       *int64 `json:"tokensPerDay"`
	TokensPerMonth     *int64 `json:"tokensPerMonth"`
	ConcurrentSessions *int64 `json:"concurrentSessions"`
}

// quotas checks q's values (1..chat.MaxQuota each; field names the
// member for errors) and returns them.
func (q *fileQuotas) quotas(field func(string) string) (chat.Quotas, error) {
	var out chat.Quotas
	if q == nil {
		return out, nil
	}
	for _, sc := range []struct {
		name string
		in   *fileQuotaLimits
		out  *chat.QuotaLimits
	}{{chat.ScopePrincipal, q.Principal, &out.Principal}, {chat.ScopeTenant, q.Tenant, &out.Tenant}} {
		if sc.in == nil {
			continue
		}
		for _, m := range []struct {
			name string
			in   *int64
			out  *int64
		}{
			{chat.QuotaTurnsPerMinute, sc.in.TurnsPerMinute, &sc.out.TurnsPerMinute},
			{chat.QuotaTokensPerDay, sc.in.TokensPerDay, &sc.out.TokensPerDay},
			{chat.QuotaTokensPerMonth, sc.in.TokensPerMonth, &sc.out.TokensPerMonth},
			{chat.QuotaConcurrentSessions, sc.in.ConcurrentSessions, &sc.out.ConcurrentSessions},
		} {
			if m.in == nil {
				continue
			}
			if *m.in < 1 || *m.in > chat.MaxQuota {
				return chat.Quotas{}, fmt.Errorf("%w: %s: want 1..2^53-1 (omit it for no limit)", ErrInvalid, field("quotas."+sc.name+"."+m.name))
			}
			*m.out = *m.in
		}
	}
	return out, nil
}

// ParseQuotas decodes a quotas document, {"principal": {...}, "tenant":
// {...}} with the members turnsPerMinute, tokensPerDay, tokensPerMonth and
// concurrentSessions (integers 1..2^53-1; absent: unlimited), as strictly
// as Parse: the deployment-wide default quotas (config QUOTAS). Errors
// wrap ErrInvalid and name the member, never its value.
func ParseQuotas(data []byte) (chat.Quotas, error) {
	var q *fileQuotas
	if err := jsonv2.Unmarshal(data, &q, jsonv2.RejectUnknownMembers(true)); err != nil {
		return chat.Quotas{}, fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	if q == nil {
		return chat.Quotas{}, fmt.Errorf("%w: want a JSON object", ErrInvalid)
	}
	return q.quotas(func(name string) string { return name })
}

// Parse decodes a definitions file: a JSON array of objects
// {id, revision, systemPrompt?, provider, modelId?, titleModel?, tools?,
// approvalTools?, promptCache?, reasoning?: {budgetTokens?, visible?},
// limits?: {maxSteps?, maxTokens?, contextTurns?, contextTokens?,
// maxOutputTokens?, maxToolCalls?, maxWallTimeMs?},
// multitask?: {default?, allowed?}, quotas?: {principal?: {turnsPerMinute?,
// tokensPerDay?, tokensPerMonth?, concurrentSessions?}, tenant?: {...}},
// mcpServers?: [{name, url, headers?, allowedTools?, requireApproval?,
// timeoutMs?}] (MCPServer)}. Decoding is strict: member names are
// case-sensitive; unknown or duplicate members, invalid UTF-8, wrong
// types and non-integral numbers are errors; null counts as absent. The result is not
// yet checked against tools or a default id (see New). Errors wrap
// ErrInvalid and name the field as a JSON pointer or "definitions[i].x".
func Parse(data []byte) ([]Definition, error) {
	var entries []fileDefinition
	if err := jsonv2.Unmarshal(data, &entries, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	if entries == nil {
		return nil, fmt.Errorf("%w: want a JSON array of definitions", ErrInvalid)
	}
	defs := make([]Definition, len(entries))
	for i, e := range entries {
		field := func(name string) string { return fmt.Sprintf("definitions[%d].%s", i, name) }
		if e.ID == nil {
			return nil, fmt.Errorf("%w: %s: required", ErrInvalid, field("id"))
		}
		if e.Revision == nil {
			return nil, fmt.Errorf("%w: %s: required", ErrInvalid, field("revision"))
		}
		if e.Provider == nil {
			return nil, fmt.Errorf("%w: %s: required", ErrInvalid, field("provider"))
		}
		d := Definition{ID: *e.ID, Revision: *e.Revision, Provider: *e.Provider, Tools: e.Tools, ApprovalTools: e.ApprovalTools, Limits: Limits{MaxSteps: DefaultMaxSteps}}
		if e.SystemPrompt != nil {
			d.SystemPrompt = *e.SystemPrompt
		}
		if e.ModelID != nil {
			d.ModelID = *e.ModelID
		}
		if e.TitleModelID != nil {
			d.TitleModelID = *e.TitleModelID
		}
		if e.PromptCache != nil {
			d.NoPromptCache = !*e.PromptCache
		}
		if r := e.Reasoning; r != nil {
			d.Reasoning = &Reasoning{}
			if r.BudgetTokens != nil {
				if *r.BudgetTokens == 0 {
					return nil, fmt.Errorf("%w: %s: want %d..%d (omit it to ask for no budget)", ErrInvalid, field("reasoning.budgetTokens"), model.MinReasoningBudget, MaxTokens-1)
				}
				d.Reasoning.BudgetTokens = *r.BudgetTokens
			}
			if r.Visible != nil {
				d.Reasoning.Hidden = !*r.Visible
			}
		}
		if e.Limits != nil {
			if e.Limits.MaxSteps != nil {
				d.Limits.MaxSteps = *e.Limits.MaxSteps
			}
			if e.Limits.MaxTokens != nil {
				d.Limits.MaxTokens = *e.Limits.MaxTokens
			}
			if e.Limits.ContextTurns != nil {
				if *e.Limits.ContextTurns == 0 {
					return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.contextTurns"), MaxContextTurns)
				}
				d.Limits.ContextTurns = *e.Limits.ContextTurns
			}
			if e.Limits.ContextTokens != nil {
				if *e.Limits.ContextTokens == 0 {
					return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.contextTokens"), MaxContextTokens)
				}
				d.Limits.ContextTokens = *e.Limits.ContextTokens
			}
			if v := e.Limits.MaxOutputTokens; v != nil {
				if *v < 1 || *v > MaxOutputTokens {
					return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxOutputTokens"), MaxOutputTokens)
				}
				d.Limits.MaxOutputTokens = *v
			}
			if v := e.Limits.MaxToolCalls; v != nil {
				if *v < 1 || *v > MaxToolCalls {
					return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxToolCalls"), MaxToolCalls)
				}
				d.Limits.MaxToolCalls = *v
			}
			if v := e.Limits.MaxWallTimeMs; v != nil {
				if *v < 1 || *v > MaxWallTime.Milliseconds() {
					return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxWallTimeMs"), MaxWallTime.Milliseconds())
				}
				d.Limits.MaxWallTime = time.Duration(*v) * time.Millisecond
			}
		}
		q, err := e.Quotas.quotas(field)
		if err != nil {
			return nil, err
		}
		d.Quotas = q
		if d.MCPServers, err = parseMCPServers(e.MCPServers, field); err != nil {
			return nil, err
		}
		if m := e.Multitask; m != nil {
			if m.Default != nil {
				d.Multitask.Default = *m.Default
			}
			if m.Allowed != nil && len(m.Allowed) == 0 {
				return nil, fmt.Errorf("%w: %s: want at least one policy", ErrInvalid, field("multitask.allowed"))
			}
			d.Multitask.Allowed = m.Allowed
		}
		defs[i] = d
	}
	return defs, nil
}

// describe names where strict decoding failed, without quoting input.
func describe(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		where := string(se.JSONPointer)
		if where == "" {
			where = "(root)"
		}
		if errors.Is(se.Err, jsonv2.ErrUnknownName) {
			return where + ": unknown member"
		}
		return where + ": wrong type or value"
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		where := string(syn.JSONPointer)
		if where == "" {
			where = "(root)"
		}
		if errors.Is(syn.Err, jsontext.ErrDuplicateName) {
			return where + ": duplicate member"
		}
		return fmt.Sprintf("%s: invalid JSON at byte %d", where, syn.ByteOffset)
	}
	return "invalid JSON"
}

// New validates defs and returns their Resolver. defaultID names the
// definition new sessions get. knownTool reports whether a tool name is
// registered (tool.Registry.Has); nil accepts none, so definitions with
// tools then fail. Checks, in order per definition: id a SafeId and
// unique; revision 1..MaxRevision; provider echo, bedrock or openai;
// modelId required for bedrock and openai; titleModel at most
// MaxTitleModelIDBytes, untrimmed spaces refused; each tool known, no repeats;
// each approval tool one of the tools and a SafeId, no repeats;
// limits.maxSteps 1..MaxSteps; limits.maxTokens 0..MaxTokens; mcpServers
// by MCPServer's rules; then
// defaultID names one of them. Errors wrap ErrInvalid and name the field.
func New(defs []Definition, defaultID string, knownTool func(name string) bool) (*Resolver, error) {
	if len(defs) == 0 {
		return nil, fmt.Errorf("%w: no definitions", ErrInvalid)
	}
	if len(defs) > MaxDefinitions {
		return nil, fmt.Errorf("%w: more than %d definitions", ErrInvalid, MaxDefinitions)
	}
	r := &Resolver{byID: make(map[string]Definition, len(defs)), defaultID: defaultID}
	for i, d := range defs {
		field := func(name string) string { return fmt.Sprintf("definitions[%d].%s", i, name) }
		if !protocol.IsSafeID(d.ID) {
			return nil, fmt.Errorf("%w: %s: not a SafeId (1..128 of [A-Za-z0-9._:-], starting alphanumeric)", ErrInvalid, field("id"))
		}
		if _, dup := r.byID[d.ID]; dup {
			return nil, fmt.Errorf("%w: %s: repeats an earlier id", ErrInvalid, field("id"))
		}
		if d.Revision < 1 || d.Revision > MaxRevision {
			return nil, fmt.Errorf("%w: %s: want an integer 1..2^53-1", ErrInvalid, field("revision"))
		}
		switch d.Provider {
		case ProviderEcho:
		case ProviderBedrock, ProviderOpenAI:
			if strings.TrimSpace(d.ModelID) == "" {
				return nil, fmt.Errorf("%w: %s: required when provider is %s", ErrInvalid, field("modelId"), d.Provider)
			}
		default:
			return nil, fmt.Errorf("%w: %s: want echo, bedrock or openai", ErrInvalid, field("provider"))
		}
		if len(d.TitleModelID) > MaxTitleModelIDBytes || d.TitleModelID != "" && strings.TrimSpace(d.TitleModelID) != d.TitleModelID {
			return nil, fmt.Errorf("%w: %s: want a model id of at most %d bytes, no surrounding spaces", ErrInvalid, field("titleModel"), MaxTitleModelIDBytes)
		}
		seen := map[string]bool{}
		for j, name := range d.Tools {
			if knownTool == nil || !knownTool(name) {
				return nil, fmt.Errorf("%w: %s: not a registered tool", ErrInvalid, field(fmt.Sprintf("tools[%d]", j)))
			}
			if seen[name] {
				return nil, fmt.Errorf("%w: %s: repeats an earlier tool", ErrInvalid, field(fmt.Sprintf("tools[%d]", j)))
			}
			seen[name] = true
		}
		approval := map[string]bool{}
		for j, name := range d.ApprovalTools {
			if !seen[name] || !protocol.IsSafeID(name) {
				return nil, fmt.Errorf("%w: %s: not one of tools (or not a SafeId)", ErrInvalid, field(fmt.Sprintf("approvalTools[%d]", j)))
			}
			if approval[name] {
				return nil, fmt.Errorf("%w: %s: repeats an earlier tool", ErrInvalid, field(fmt.Sprintf("approvalTools[%d]", j)))
			}
			approval[name] = true
		}
		if d.Limits.MaxSteps < 1 || d.Limits.MaxSteps > MaxSteps {
			return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxSteps"), MaxSteps)
		}
		if d.Limits.MaxTokens < 0 || d.Limits.MaxTokens > MaxTokens {
			return nil, fmt.Errorf("%w: %s: want 0..%d", ErrInvalid, field("limits.maxTokens"), MaxTokens)
		}
		if err := checkReasoning(d, field); err != nil {
			return nil, err
		}
		if d.Limits.ContextTurns < 0 || d.Limits.ContextTurns > MaxContextTurns {
			return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.contextTurns"), MaxContextTurns)
		}
		if d.Limits.ContextTokens < 0 || d.Limits.ContextTokens > MaxContextTokens {
			return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.contextTokens"), MaxContextTokens)
		}
		if d.Limits.MaxOutputTokens < 0 || d.Limits.MaxOutputTokens > MaxOutputTokens {
			return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxOutputTokens"), MaxOutputTokens)
		}
		if d.Limits.MaxToolCalls < 0 || d.Limits.MaxToolCalls > MaxToolCalls {
			return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxToolCalls"), MaxToolCalls)
		}
		if d.Limits.MaxWallTime < 0 || d.Limits.MaxWallTime > MaxWallTime {
			return nil, fmt.Errorf("%w: %s: want 1..%d", ErrInvalid, field("limits.maxWallTimeMs"), MaxWallTime.Milliseconds())
		}
		if err := checkQuotas(d.Quotas, field); err != nil {
			return nil, err
		}
		if err := checkMultitask(d.Multitask, field); err != nil {
			return nil, err
		}
		if err := checkMCPServers(d.MCPServers, field); err != nil {
			return nil, err
		}
		d.Tools = append([]string(nil), d.Tools...)
		d.ApprovalTools = append([]string(nil), d.ApprovalTools...)
		d.Multitask.Allowed = append([]string(nil), d.Multitask.Allowed...)
		d.MCPServers = cloneMCPServers(d.MCPServers)
		r.byID[d.ID] = d
		r.order = append(r.order, d.ID)
	}
	if _, ok := r.byID[defaultID]; !ok {
		return nil, fmt.Errorf("%w: DEFINITION_ID: names no definition", ErrInvalid)
	}
	return r, nil
}

// checkReasoning reports ErrInvalid for a reasoning budget the models
// that take one refuse: below model.MinReasoningBudget, or not below the
// definition's maxTokens (also when maxTokens is left to the provider,
// whose default the budget may pass). Definitions have no temperature
// nor forced tool choice, which thinking models also refuse.
func checkReasoning(d Definition, field func(string) string) error {
	r := d.Reasoning
	if r == nil || r.BudgetTokens == 0 {
		return nil
	}
	if r.BudgetTokens < model.MinReasoningBudget || r.BudgetTokens >= MaxTokens {
		return fmt.Errorf("%w: %s: want %d..%d", ErrInvalid, field("reasoning.budgetTokens"), model.MinReasoningBudget, MaxTokens-1)
	}
	if d.Limits.MaxTokens <= r.BudgetTokens {
		return fmt.Errorf("%w: %s: set limits.maxTokens above the reasoning budget (the reasoning counts in each model call's completion)", ErrInvalid, field("reasoning.budgetTokens"))
	}
	return nil
}

// checkQuotas reports ErrInvalid for a negative quota or one above
// chat.MaxQuota.
func checkQuotas(q chat.Quotas, field func(string) string) error {
	for _, sc := range []struct {
		name string
		l    chat.QuotaLimits
	}{{chat.ScopePrincipal, q.Principal}, {chat.ScopeTenant, q.Tenant}} {
		for name, v := range map[string]int64{chat.QuotaTurnsPerMinute: sc.l.TurnsPerMinute, chat.QuotaTokensPerDay: sc.l.TokensPerDay,
			chat.QuotaTokensPerMonth: sc.l.TokensPerMonth, chat.QuotaConcurrentSessions: sc.l.ConcurrentSessions} {
			if v < 0 || v > chat.MaxQuota {
				return fmt.Errorf("%w: %s: want 1..2^53-1 (omit it for no limit)", ErrInvalid, field("quotas."+sc.name+"."+name))
			}
		}
	}
	return nil
}

// checkMultitask reports ErrInvalid unless m names known policies, no
// repeats, reject among the allowed ones and the default among them.
func checkMultitask(m Multitask, field func(string) string) error {
	seen := map[string]bool{}
	for j, p := range m.Allowed {
		if !slices.Contains(MultitaskPolicies, p) || seen[p] {
			return fmt.Errorf("%w: %s: want one of %s, no repeats", ErrInvalid, field(fmt.Sprintf("multitask.allowed[%d]", j)), strings.Join(MultitaskPolicies, ", "))
		}
		seen[p] = true
	}
	def, allowed := m.Policies()
	if !slices.Contains(allowed, MultitaskReject) {
		return fmt.Errorf("%w: %s: must include %s", ErrInvalid, field("multitask.allowed"), MultitaskReject)
	}
	if !slices.Contains(allowed, def) {
		return fmt.Errorf("%w: %s: want one of the allowed policies", ErrInvalid, field("multitask.default"))
	}
	return nil
}
