// Package otlp builds the OpenTelemetry SDK's tracer provider that
// exports turnstream's spans over OTLP/HTTP (docs/operations.md): to the
// ADOT Lambda layer's collector on localhost, or any OTLP endpoint.
//
// It uses the SDK (go.opentelemetry.io/otel/sdk: sampling from
// OTEL_TRACES_SAMPLER, batching, ids) with an exporter of its own,
// Exporter, which sends OTLP's JSON encoding: the SDK's otlptracehttp
// exporter sends protobuf and links gRPC and the protobuf runtime, whose
// package initialisation costs every cold start about a millisecond
// whether tracing is on or not (measured; docs/operations.md).
package otlp
