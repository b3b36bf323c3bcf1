// Package engine is turnstream's turn engine: the turn pipeline of the
// turn function behind a Lambda function URL in RESPONSE_STREAM mode
// (docs/design.md#the-three-functions, docs/design.md#the-turn-pipeline),
// from a request's checks and the claim of its session's lease to the
// release, with the stream, the resume and the drain of queued turns.
// Its HTTP edge, pkg/turn, routes requests to it (Engine.ServeSubmit and
// the other Serve methods), authenticates their callers when it asks
// (Config.Authenticate) and measures them (Config.Trace, Config.Accepted):
// the engine knows neither routes nor authentication nor telemetry
// (docs/architecture.md#the-seams).
//
// A request runs under one deadline, min(TurnTimeout, Lambda remaining
// time - CleanupReserve), checked in the reference handler's order
// (docs/protocol.md#server-handler-behaviour): method, content type,
// authentication on headers only, before any body byte is read, the
// snapshot scope and stream mode headers, the body under a hard cap, JSON,
// the turn event, lineage, the claim of the session's lease, supersession
// of replaced turns and the context load. Nothing, not a model call nor a
// tool call, happens before the claim succeeds. Every failure before the
// stream is one JSON error body, mapped from domain errors in one table:
// the HTTP edge shared with the history and artifacts handlers
// (pkg/httpedge).
//
// After the claim, and with checkpoints on after the turn's
// acknowledgment (its first checkpoint: the turn is recorded before the
// stream starts, docs/durable-turns.md), the response is a 200 NDJSON
// stream of complete snapshots (docs/design.md#snapshots), numbered from
// the sequence the claim reserved. One pending slot holds the latest turn
// state; a writer goroutine emits it at most every SnapshotInterval, so a
// slow reader receives fewer, newer snapshots, and only while the lease is
// proven. The lease is renewed every LeaseDuration/3; a stop flag, seen at
// the next checkpoint (at the next renewal with checkpoints off), ends the
// turn as interrupted. Cleanup runs on every exit path (completion, model
// error, timeout, client disconnect, write failure, storage failure), each
// phase under its own bounded context: stop the model, save the turn,
// release the lease. Only then is the last line written, saying only what
// the table holds: a terminal snapshot (and a trailing diagnostic after a
// timeout or a cancellation); the lost record (TURN_LOST) of a turn whose
// lease was lost, once the table decided it; or TURN_OUTCOME_INDETERMINATE
// when the save's outcome could not be confirmed. A stream never just
// stops.
//
// A submit that finds its session busy follows its multitask policy
// (api.MultitaskHeader, docs/multitask.md): rejected (409 SESSION_BUSY), queued
// (202; Engine.Drain runs it once the session is free), or run in place of
// the running turn (interrupt, rollback).
//
// Definitions, models and tools (docs/design.md#models-tools-definitions).
// Before the claim the turn resolves the session's definition
// (Config.Definitions: a new session gets the default, an existing one keeps
// its definition id and runs its current revision; the claim records id and
// revision). The model-tool loop then makes at most limits.maxSteps model
// calls: text deltas grow the assistant message; each tool call the model asks
// for appears in its toolCalls as pending, then running, then complete or
// error with the result, and the results go back to the model as tool messages
// for the next call. Calls asked for in the last allowed call are recorded as
// failed with TextStepLimit and never run. The texts of two model calls are
// joined with a blank line. Usage is summed over the calls. Artifact
// references returned by tools are saved with the turn before its terminal
// snapshot; render frames returned by tools (checked against the registry's
// closed manifest) switch the assistant content to the ordered envelope
// agentskit.chat.content/1 (docs/protocol.md#ordered-assistant-content), text
// and components in order. Models only ever see plain text (PlainText) and the
// stored tool calls expanded into tool messages (model.ExpandToolCalls). One
// assistant message per turn is stored, with its toolCalls and their results;
// a call that never finished is stored as failed. The request deadline and the
// stop route cancel a running tool through its context.
//
// AG-UI (docs/agui.md). POST /agui takes an AG-UI RunAgentInput as a
// submit (pkg/agui decodes it) and runs it through the same pipeline from
// the claim on; a third writer (aguiWriter, beside writer and
// compactWriter) encodes the same turn states as AG-UI events: an encoder
// (aguiEncoder) holds what the stream's client holds of the turn and emits
// the deltas that take it to each new state, or a MESSAGES_SNAPSHOT when
// no delta can. Every event's SSE id names the state it leads to, so GET
// /agui/threads/{threadId}/runs/{runId} with Last-Event-ID continues a run
// through the resume machinery of the NDJSON route.
//
// Snapshot scope (docs/design.md#snapshots). A session-scope snapshot carries
// the session's visible messages, but a canonical record holds at most 10,000
// JSON values (docs/protocol.md#the-canonical-message-record): when the
// history passes that, snapshots leave out the oldest whole turns until they
// fit, the same for every later snapshot of the turn, and the client pages
// older history from the history function. The model's context is never cut.
// Turn scope (api.SnapshotScopeHeader "turn") carries the current turn only.
//
// Every failure before the stream is a JSON error body with a fixed
// message, its code's HTTP status and retryability in the one table of
// docs/design.md#errors (pkg/httpedge maps the errors to codes).
//
// A claimed turn that fails before its stream starts (supersession or
// context load) is saved with status error and released, so its turn id
// is spent: a replay gets TURN_ALREADY_COMPLETED.
//
// Telemetry (docs/operations.md) is the edge's: the engine calls the
// hooks Config.Trace returns at the steps of each turn (its first
// snapshot, each checkpoint, a stop seen, each model and tool call, its
// end; Trace), and pkg/turn turns them into the turn's EMF document and
// spans.
package engine
