// Package smoketest runs the three Lambda bootstraps (functions/turn,
// functions/history, functions/artifacts) under the AWS Lambda runtime
// interface emulator against a DynamoDB API server (dynalite) and invokes
// each with the sample function URL events in events/ (docs/design.md#running-it).
//
// The emulator speaks the real Runtime API, so the test proves the whole
// runtime path: bootstrap start-up and configuration, the lambdaurl
// streaming adapter (whose prelude, 8 NUL bytes and NDJSON body the
// emulator returns at once) and the api-proxy adapter of the buffered
// functions. Incremental delivery itself is tested by internal/runtimetest,
// whose own Runtime API records when each chunk arrives.
//
// The package holds tests only. The bootstraps and the pinned emulator
// come from internal/lambdabin: `make test` builds the bootstraps and
// installs the emulator before the tests start; a plain `go test
// ./internal/smoketest` does both itself, once.
package smoketest
