// Package client is turnstream's Go client: it speaks the HTTP API of the
// three functions (docs/design.md#the-three-functions) the way clients/js
// does for the browser, and is what cmd/turnctl and cmd/turnbench use.
//
// The turn function: Submit sends a client.turn.submit and returns its
// Stream, whose Next decodes each NDJSON line with pkg/protocol's strict
// decoder and returns the snapshots a snapshot cursor accepts (complete
// snapshots with strictly increasing sequences; docs/protocol.md#the-snapshot-cursor)
// up to the terminal one. A stream that drops before its terminal line is
// resumed over the resume route (GET
// {TurnURL}sessions/{id}/turns/{turnId}/stream?after=N) from the last
// sequence it accepted, when the capabilities offer it, so no snapshot is
// returned twice; Resume reads a running turn from another process. Stop
// ends a turn (a client that leaves a stream does not: on Lambda the turn
// runs on). Decide answers a tool call waiting for approval
// (docs/approvals.md). Submit.Multitask says what a busy session does
// with the submit (docs/multitask.md): reject it (SESSION_BUSY), queue it
// (the Stream then reports Queued and follows the turn from its start),
// or interrupt or roll back the running turn; StopTurn cancels a queued
// turn that has not started. A stream that drops while the server cannot
// even be asked for its capabilities keeps trying within its resume
// attempts. Compact mode (docs/compact.md) reads append lines
// into the same cursor (protocol.CompactCursor). Capabilities is fetched
// once per Client.
//
// The history function: Session is the session summary (its running turn
// and the calls waiting for a decision); Turns and Messages are one page
// each, TurnPages and MessagePages walk the page cursors. The artifacts
// function: Artifacts and PutArtifacts.
//
// Requests carry the caller's credentials through an Authenticator: a
// Bearer token (the jwt and dev auth modes) or a SigV4 signature (service
// lambda, for function URLs with AuthType AWS_IAM). Every failure but a
// context's is an *Error carrying the protocol diagnostic (the server's,
// or one of a client code) and whether a retry may succeed
// (Error.Retryable); a context that ends stops every request and stream
// with its own error.
package client
