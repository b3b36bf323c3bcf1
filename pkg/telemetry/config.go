package telemetry

// Config is a process's telemetry configuration (pkg/config fills it from
// TELEMETRY_* and the standard OTEL_* variables; docs/operations.md).
type Config struct {
	// Metrics is MetricsEMF or MetricsOff (TELEMETRY_METRICS; emf by
	// default on Lambda, off elsewhere).
	Metrics string
	// Namespace is the CloudWatch namespace (TELEMETRY_NAMESPACE, default
	// DefaultNamespace; ValidNamespace).
	Namespace string
	// Service is the Service dimension and the spans' service.name
	// (OTEL_SERVICE_NAME, default DefaultService).
	Service string
	// TracesURL is the OTLP/HTTP traces endpoint spans are sent to
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or
	// OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"); empty means tracing
	// off.
	TracesURL string
	// TracesHeaders are sent with each export
	// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS;
	// never logged).
	TracesHeaders map[string]string
	// CaptureContent puts message content on spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; default
	// false).
	CaptureContent bool
}

// Tracing reports whether c sends spans.
func (c Config) Tracing() bool { return c.TracesURL != "" }
