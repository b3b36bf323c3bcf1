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
//
// Responses of POST / before the stream, in check order (JSON
// {"error":{"version":1,"code","message","retryable"}}, fixed messages):
//
//	405 REQUEST_METHOD_NOT_ALLOWED      not POST (Allow: POST)
//	415 REQUEST_UNSUPPORTED_MEDIA_TYPE  Content-Type not application/json*
//	401 REQUEST_UNAUTHENTICATED         403 REQUEST_FORBIDDEN
//	400 REQUEST_INVALID_HEADER          X-Turnstream-Snapshot-Scope not session|turn
//	413 REQUEST_TOO_LARGE               declared or read body over MaxBodyBytes
//	400 REQUEST_INVALID_JSON            empty or invalid JSON
//	400 REQUEST_INVALID_EVENT           not a valid client.turn.submit
//	422 LINEAGE_INVALID                 parent not a visible turn of the session,
//	                                    unknown sourceMessageId, retry/regenerate input differs
//	404 SESSION_NOT_FOUND               another principal's (or, with lineage, no) session
//	409 SESSION_BUSY                    another unexpired lease (retryable)
//	409 TURN_ALREADY_COMPLETED          409 TURN_OUTCOME_INDETERMINATE (replays)
//	422 TURN_ID_REUSED                  same turn id, other input
//	409 SESSION_CONFLICT                lost compare-and-set (retryable)
//	408 SERVER_TIMEOUT                  499 REQUEST_CANCELLED   500 SERVER_INTERNAL
//
// A claimed turn that fails before its stream starts (supersession or
// context load) is saved with status error and released, so its turn id
// is spent: a replay gets TURN_ALREADY_COMPLETED.
package turn
