package deploytest_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/turnstream/turnstream/pkg/telemetry"
)

// metricNames are the metrics turnstream's EMF documents carry
// (pkg/telemetry): an alarm or a dashboard widget on any other name in
// the telemetry namespace would watch a metric that never arrives.
var metricNames = []string{
	telemetry.MetricInputTokens, telemetry.MetricOutputTokens, telemetry.MetricOperationDuration,
	telemetry.MetricTimeToFirstChunk, telemetry.MetricTurnCount, telemetry.MetricTurnDuration,
	telemetry.MetricTimeToFirstSnapshot, telemetry.MetricModelCalls, telemetry.MetricToolCalls,
	telemetry.MetricDynamoDBRequests, telemetry.MetricDynamoDBReadUnits, telemetry.MetricDynamoDBWriteUnits,
	telemetry.MetricLeaseConflicts, telemetry.MetricCheckpoints, telemetry.MetricResumeCount,
	telemetry.MetricStopLatency, telemetry.MetricRequestCount, telemetry.MetricRequestDuration,
}

// checkAlarms: with Alarms true the stack has its six alarms and the
// dashboard, none otherwise; every alarm on turnstream's own metrics
// names a metric and a dimension set the functions' documents carry, in
// the namespace and under the Service they write (TELEMETRY_NAMESPACE,
// OTEL_SERVICE_NAME); alarm actions exist only with AlarmTopicArn; the
// turn function's near-timeout alarm is at 90 % of its Timeout.
func checkAlarms(t *testing.T, d *deployment, params map[string]any, want bool) {
	t.Helper()
	resources := d.raw["Resources"].(map[string]any)
	alarms, dashboards := 0, 0
	env := d.environment("TurnFunction")
	for name, r := range resources {
		res := r.(map[string]any)
		props, _ := res["Properties"].(map[string]any)
		switch res["Type"] {
		case "AWS::CloudWatch::Alarm":
			alarms++
			checkAlarm(t, name, props, env, params)
		case "AWS::CloudWatch::Dashboard":
			dashboards++
			checkDashboard(t, props)
		}
	}
	wantAlarms, wantDashboards := 6, 1
	if !want {
		wantAlarms, wantDashboards = 0, 0
	}
	if alarms != wantAlarms || dashboards != wantDashboards {
		t.Errorf("%d alarms and %d dashboards, want %d and %d", alarms, dashboards, wantAlarms, wantDashboards)
	}
	if !want {
		return
	}
	fn, err := d.tpl.GetServerlessFunctionWithName("TurnFunction")
	if err != nil {
		t.Fatal(err)
	}
	near := resources["TurnDurationNearTimeoutAlarm"].(map[string]any)["Properties"].(map[string]any)
	threshold, _ := strconv.ParseFloat(fmt.Sprint(near["Threshold"]), 64)
	if timeout := seconds(fn.Timeout).Seconds(); threshold != 0.9*timeout*1000 {
		t.Errorf("near-timeout threshold %v ms, want 90%% of the turn function's %v s", threshold, timeout)
	}
}

// metricRef is a metric an alarm watches.
type metricRef struct {
	Namespace, MetricName string
	Dimensions            []struct{ Name, Value any }
}

func checkAlarm(t *testing.T, name string, props map[string]any, env map[string]string, params map[string]any) {
	t.Helper()
	var refs []metricRef
	if props["MetricName"] != nil {
		var m metricRef
		remarshal(t, props, &m)
		refs = append(refs, m)
	}
	if ms, ok := props["Metrics"].([]any); ok {
		for _, q := range ms {
			stat, ok := q.(map[string]any)["MetricStat"].(map[string]any)
			if !ok {
				continue
			}
			var m metricRef
			remarshal(t, stat["Metric"], &m)
			refs = append(refs, m)
		}
	}
	if len(refs) == 0 {
		t.Errorf("alarm %s watches no metric", name)
	}
	namespace := env["TELEMETRY_NAMESPACE"]
	for _, m := range refs {
		if m.Namespace != namespace {
			continue // AWS/Lambda, AWS/DynamoDB
		}
		if !slices.Contains(metricNames, m.MetricName) {
			t.Errorf("alarm %s watches %s, which no document carries", name, m.MetricName)
		}
		dims := map[string]string{}
		var keys []string
		for _, dim := range m.Dimensions {
			dims[fmt.Sprint(dim.Name)] = fmt.Sprint(dim.Value)
			keys = append(keys, fmt.Sprint(dim.Name))
		}
		if dims["Service"] != env["OTEL_SERVICE_NAME"] {
			t.Errorf("alarm %s: Service %q, the functions write %q", name, dims["Service"], env["OTEL_SERVICE_NAME"])
		}
		switch {
		case slices.Equal(keys, []string{"Service", "Function"}):
			if dims["Function"] != "turn" {
				t.Errorf("alarm %s: Function %q", name, dims["Function"])
			}
		case slices.Equal(keys, []string{"Service", "Outcome"}):
			if o := dims["Outcome"]; o != telemetry.OutcomeComplete && o != telemetry.OutcomeInterrupted {
				t.Errorf("alarm %s: Outcome %q", name, o)
			}
		default:
			t.Errorf("alarm %s: dimensions %v are not a set the documents carry", name, keys)
		}
	}
	_, hasActions := props["AlarmActions"]
	if notify := params["AlarmTopicArn"] != nil && params["AlarmTopicArn"] != ""; hasActions != notify {
		t.Errorf("alarm %s: actions %v, want them only with AlarmTopicArn", name, props["AlarmActions"])
	}
}

// checkDashboard: the body is JSON with widgets, and every turnstream or
// GenAI metric it names is one the documents carry.
func checkDashboard(t *testing.T, props map[string]any) {
	t.Helper()
	body, _ := props["DashboardBody"].(string)
	var v struct{ Widgets []map[string]any }
	if err := json.Unmarshal([]byte(body), &v); err != nil || len(v.Widgets) < 8 {
		t.Fatalf("dashboard body: %v (%d widgets)\n%s", err, len(v.Widgets), body)
	}
	for _, m := range regexp.MustCompile(`"((?:turnstream|gen_ai)\.[a-z_.]+)`).FindAllStringSubmatch(body, -1) {
		if !slices.Contains(metricNames, m[1]) {
			t.Errorf("the dashboard names %s, which no document carries", m[1])
		}
	}
	for _, want := range []string{telemetry.MetricTurnCount, telemetry.MetricTimeToFirstSnapshot, telemetry.MetricInputTokens,
		telemetry.MetricOutputTokens, telemetry.MetricDynamoDBWriteUnits, telemetry.MetricDynamoDBReadUnits} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// checkTracing: Tracing off, xray or adot reaches the functions as the
// configuration expects: X-Ray active tracing from xray on, the ADOT
// layer and the OTLP endpoint on localhost only with adot, content
// capture only when asked for, metrics as TelemetryMetrics says. (The
// X-Ray write permission is SAM's, checked on the translated template.)
func checkTracing(t *testing.T, d *deployment, params map[string]any) {
	t.Helper()
	mode := fmt.Sprint(params["Tracing"])
	if params["Tracing"] == nil {
		mode = "off"
	}
	wantActive := "PassThrough"
	if mode != "off" {
		wantActive = "Active"
	}
	if got := d.globalFunction["Tracing"]; got != wantActive {
		t.Errorf("Globals.Function.Tracing = %v, want %s", got, wantActive)
	}
	layers, hasLayers := d.globalFunction["Layers"].([]any)
	if hasLayers != (mode == "adot") || (hasLayers && (len(layers) != 1 || layers[0] != params["AdotLayerArn"])) {
		t.Errorf("Globals.Function.Layers = %v with Tracing %s", d.globalFunction["Layers"], mode)
	}
	for fname := range functions {
		cfg := parseConfig(t, fname, d.environment(fname))
		if got, want := cfg.Telemetry.TracesURL, map[bool]string{true: "http://localhost:4318/v1/traces"}[mode == "adot"]; got != want {
			t.Errorf("%s: traces to %q, want %q", fname, got, want)
		}
		if cfg.Telemetry.CaptureContent != (params["CaptureMessageContent"] == "true") {
			t.Errorf("%s: content capture %v", fname, cfg.Telemetry.CaptureContent)
		}
		wantMetrics := telemetry.MetricsEMF
		if params["TelemetryMetrics"] == "off" {
			wantMetrics = telemetry.MetricsOff
		}
		if cfg.Telemetry.Metrics != wantMetrics {
			t.Errorf("%s: metrics %q, want %q", fname, cfg.Telemetry.Metrics, wantMetrics)
		}
	}
}

// remarshal decodes v (a map from the evaluated template) into out.
func remarshal(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}
