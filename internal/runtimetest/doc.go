// Package runtimetest proves the turn function's runtime path end to end:
// the real turn bootstrap (functions/turn, as `make test-bootstraps` builds
// it) runs against a Lambda Runtime API served by the test itself, which
// records when each chunk of the streamed response arrives
// (docs/design.md#running-it).
//
// The test Runtime API implements the documented protocol
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html): GET
// /2018-06-01/runtime/invocation/next hands out a function URL event with
// the Lambda-Runtime-* headers, POST .../{id}/response takes the response
// (in streaming mode HTTP/1.1 chunked, with the error trailers
// Lambda-Runtime-Function-Error-Type and -Body), POST .../{id}/error and
// POST /2018-06-01/runtime/init/error take errors. Unlike the runtime
// interface emulator (internal/smoketest), which returns a streamed body
// all at once, it shows incremental delivery: the arrival time of every
// NDJSON line as Lambda would receive it from the function.
//
// The package holds tests only; the bootstrap and dynalite come from
// internal/lambdabin and internal/dynalite as in internal/smoketest.
package runtimetest
