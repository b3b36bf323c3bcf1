// Package turn is the turn function's http.Handler: the HTTP edge of the
// turn engine (pkg/turn/engine) behind a Lambda function URL in
// RESPONSE_STREAM mode (docs/design.md#the-three-functions).
//
// NewHandler builds the engine from Options' Config and puts three things
// around it:
//
//   - the routes: http.ServeMux method and path patterns (NewHandler lists
//     them), each answered by one of the engine's Serve methods; a path or
//     method no route has is answered here, with the protocol's JSON error
//     body;
//   - authentication: Options.Authenticator, which the engine calls
//     (engine.Config.Authenticate) after the method and media type checks
//     and before any body byte is read, in the reference handler's order
//     (docs/protocol.md#server-handler-behaviour);
//   - telemetry: every request measured (telemetry.Measure: one EMF
//     document per request that runs no turn, the caller's trace
//     continued), and each turn's hooks (engine.Trace) turned into its EMF
//     document and its invoke_agent, chat and execute_tool spans
//     (Options.Metrics, Options.Tracing; docs/operations.md). Neither ever
//     fails a request: a document that cannot be written is dropped.
//
// Handler.Drain runs a session's queued turns for the drain invocations
// Options.Dispatch starts (docs/multitask.md).
//
// The engine's names a handler's users need (the Default* durations, the
// metadata members, Definition, DrainRequest) are named here too
// (exports.go), so that configuring the turn function needs only this
// package.
package turn
