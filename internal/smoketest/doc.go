// Package smoketest runs the three Lambda bootstraps (functions/turn,
// functions/history, functions/artifacts) under the AWS Lambda runtime
// interface emulator against a DynamoDB API server (dynalite) and invokes
// each with the sample function URL events in events/ (docs/design.md §10).
//
// The emulator speaks the real Runtime API, so the test proves the whole
// runtime path: bootstrap start-up and configuration, the lambdaurl
// streaming adapter (whose prelude, 8 NUL bytes and NDJSON body the
// emulator returns at once) and the api-proxy adapter of the buffered
// functions. Incremental delivery itself is tested in-process (pkg/turn).
//
// The package holds tests only; `go test ./internal/smoketest` builds the
// bootstraps for the host's GOOS/GOARCH with -tags lambda.norpc and
// installs the pinned emulator (`make rie` does the same ahead of time).
package smoketest
