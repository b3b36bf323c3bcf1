// Package api declares turnstream's HTTP contract beside the turn
// protocol: the request and response headers of its extensions, the
// capability (extension) names, the routes below a function's base URL,
// and the JSON bodies of the routes that are not turn events (the session
// summary, the queued-turn answer, the stop request and answer, the usage
// reports, the capabilities document and the error body). The turn
// protocol itself (events, diagnostics and their one table of codes,
// messages and statuses) is pkg/protocol's.
//
// Every declaration here is the only one: the servers (pkg/turn,
// pkg/sessionapi), the Go client (pkg/client), turnctl and the fate rig
// use these names, and the TypeScript client's clients/js/src/wire.ts is
// generated from this package (TestTypeScriptContract fails when the
// committed file differs from what the declarations give). A body type's
// field order is its encoding order; its doc comment gives its shape,
// units and limits.
//
// The package imports only pkg/protocol and the standard library, so
// that anything speaking turnstream's HTTP API can import it without the
// server's dependencies.
package api
