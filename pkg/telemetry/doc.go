// Package telemetry is how turnstream reports what it does to the
// operator (docs/operations.md): CloudWatch metrics in the Embedded Metric
// Format, written as log lines, and OpenTelemetry spans named and
// attributed by the OpenTelemetry GenAI semantic conventions.
//
// Metrics. A Recorder writes one EMF document per finished turn
// (Recorder.Turn) and one per other request (Recorder.Request) to the
// process's log: CloudWatch Logs extracts the metrics, with no collector
// and no extra request. Dimension sets are small and fixed ([Service,
// Function], [Service, Outcome], [Service, Model], and [Service, Tool,
// Status] for tool calls); session, turn, tenant and principal ids are
// properties of the document, never dimensions. EMF takes one value per
// dimension per document, so the token usage of a turn is split by type
// into two metric names (MetricInputTokens, MetricOutputTokens), and the
// tool calls of a turn by tool and status go in one small document per
// (tool, status) beside the turn's. A nil *Recorder records nothing
// (TELEMETRY_METRICS=off).
//
// Traces. The turn and history handlers start their spans from a
// trace.TracerProvider (the OpenTelemetry API only: a process without
// tracing configured uses the no-op provider, which costs a few
// nanoseconds per span). Handler wraps an http.Handler with a server span
// that continues the caller's trace (W3C traceparent, else AWS X-Ray's
// X-Amzn-Trace-Id); the turn pipeline adds an invoke_agent span per turn,
// a chat span per model call and an execute_tool span per tool call
// (GenAI attribute keys below), and SmithyTracerProvider hands the same
// provider to the AWS SDK, whose own instrumentation then adds a client
// span per DynamoDB operation. Message content is never put on a span
// unless CaptureContent is set (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
// Package pkg/telemetry/otlp builds the SDK's provider with an OTLP
// exporter.
//
// A telemetry failure never fails a request: a document that cannot be
// written is dropped and counted (Recorder.Dropped), and a span that
// cannot be exported is the exporter's loss.
package telemetry
