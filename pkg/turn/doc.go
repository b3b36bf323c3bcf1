// Package turn is turnstream's turn pipeline and its http.Handler: the
// turn function behind a Lambda function URL in RESPONSE_STREAM mode
// (DESIGN §1, §4).
//
// A request runs under one deadline, min(TurnTimeout, Lambda remaining
// time - CleanupReserve), checked in the reference handler's order
// (AgentsKit wire §9): method (405), content type (415), authentication on
// headers only, before any body byte is read (401/403), the body under a
// hard cap (413), JSON (400 REQUEST_INVALID_JSON), the turn event (400
// REQUEST_INVALID_EVENT), lineage (422 LINEAGE_INVALID), the claim of the
// session's lease (404/409/422), supersession of replaced turns and the
// context load. Nothing, not a model call nor a tool call, happens before
// the claim succeeds. Every failure before the stream is one JSON error
// body, mapped from domain errors in one table.
//
// After the claim the response is a 200 NDJSON stream of complete
// snapshots (DESIGN §3), numbered from the sequence the claim reserved,
// with no storage write per snapshot. One pending slot holds the latest
// turn state; a writer goroutine emits it at most every SnapshotInterval,
// so a slow reader receives fewer, newer snapshots. The lease is renewed
// every LeaseDuration/3; a stop flag seen at a renewal ends the turn as
// interrupted. Cleanup runs on every exit path (completion, model error,
// timeout, client disconnect, write failure, storage failure), each phase
// under its own bounded context: stop the model, save the turn, release
// the lease. Only then is the last line written: a terminal snapshot, or a
// server.turn.diagnostic when the turn timed out, was cancelled, lost its
// lease or could not be saved. A stream never just stops.
package turn
