package deploytest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/attach/s3read"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// functions maps each template function to the DynamoDB and S3 actions
// its code declares (dynamo.*FunctionActions; s3read.Actions,
// s3attach.DeleteActions, s3attach.SignActions) and its function URL
// invoke mode (docs/design.md#the-three-functions).
var functions = map[string]struct {
	actions    []string
	s3Actions  []string
	invokeMode string
}{
	"TurnFunction":      {dynamo.TurnFunctionActions, s3read.Actions, "RESPONSE_STREAM"},
	"HistoryFunction":   {dynamo.HistoryFunctionActions, s3attach.DeleteActions, "BUFFERED"},
	"ArtifactsFunction": {dynamo.ArtifactsFunctionActions, s3attach.SignActions, "BUFFERED"},
}

// turnOnlyVariables are the config.Variables only the turn function reads
// (the turn pipeline, the model and the definition): the history and
// artifacts functions are exempt from them. Every other variable must be
// set on every function.
var turnOnlyVariables = []string{
	"CLEANUP_RESERVE", "DEFINITIONS_FILE", "DEFINITION_ID", "DEFINITION_REVISION", "ECHO_CHUNK_RUNES",
	"ECHO_DELAY", "LEASE_DURATION", "MODEL_ID", "MODEL_MAX_STEPS", "MODEL_MAX_TOKENS", "MODEL_MAX_OUTPUT_TOKENS",
	"MODEL_MAX_TOOL_CALLS", "MODEL_MAX_WALL_TIME", "MODEL_PROVIDER",
	"MODEL_TOOLS", "OPENAI_API_KEY", "OPENAI_API_KEY_SECRET_ARN", "OPENAI_BASE_URL", "SESSION_RETENTION", "SNAPSHOT_INTERVAL",
	"SYSTEM_PROMPT", "TURN_TIMEOUT",
}

// parameterSets are the deployments the template is checked under.
var parameterSets = map[string]map[string]any{
	"defaults (iam, echo)": {},
	// The chat page (docs/chat-page.md) runs the functions in jwt mode
	// whatever AuthMode says.
	"chat page, Cognito": {"ChatPage": "cognito", "CognitoDomainPrefix": "turnstream-chat"},
	"chat page, an OIDC issuer": {
		"ChatPage": "oidc", "JwtJwksUrl": "https://issuer.example/.well-known/jwks.json", "JwtIssuer": "https://issuer.example/",
		"JwtAudience": "turnstream", "ChatPageClientId": "chat-page",
	},
	"jwt and bedrock": {
		"AuthMode": "jwt", "JwtJwksUrl": "https://issuer.example/.well-known/jwks.json",
		"JwtIssuer": "https://issuer.example/", "JwtAudience": "turnstream",
		"ModelProvider": "bedrock", "ModelId": "anthropic.claude-3-haiku-20240307-v1:0",
		"TableDeletionProtection": "false", "AllowedOrigins": "https://chat.example.com,https://admin.example.com",
		"AttachmentRetentionDays": "30",
	},
	"bedrock US inference profile":         {"ModelProvider": "bedrock", "ModelId": "us.anthropic.claude-sonnet-4-20250514-v1:0"},
	"bedrock global inference profile":     {"ModelProvider": "bedrock", "ModelId": "global.anthropic.claude-sonnet-4-5-20250929-v1:0"},
	"bedrock EU inference profile":         {"ModelProvider": "bedrock", "ModelId": "eu.amazon.nova-pro-v1:0"},
	"bedrock APAC inference profile":       {"ModelProvider": "bedrock", "ModelId": "apac.anthropic.claude-3-5-sonnet-20241022-v2:0"},
	"bedrock model id containing a prefix": {"ModelProvider": "bedrock", "ModelId": "meta.llama3-us.eu-70b-v1:0"},
	"openai":                               {"ModelProvider": "openai", "ModelId": "gpt-4o-mini", "OpenAIApiKey": "sk-test"},
	"openai, a key secret of one's own":    {"ModelProvider": "openai", "ModelId": "gpt-4o-mini", "OpenAIApiKeySecretArn": testOpenAIKeySecretARN},
	"openai, no key (a local server)":      {"ModelProvider": "openai", "ModelId": "llama3.2", "OpenAIBaseUrl": "https://llm.example/v1/"},
	"mcp header secrets":                   {"McpHeaderSecretArns": testMcpSecretARNs},
	"longest turn":                         {"TurnTimeout": "840"},
	"two-minute turn":                      {"TurnTimeout": "120"},
	"ten-minute turn":                      {"TurnTimeout": "600"},
	"one-minute turn":                      {"TurnTimeout": "60"},
	"five-minute turns":                    {"TurnTimeout": "300"},
	"adot tracing, alarms notify": {"Tracing": "adot", "AdotLayerArn": "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-1-0:1",
		"AlarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops", "CaptureMessageContent": "true", "TelemetryNamespace": "Chat/Prod"},
	"memory sizes":                 {"TurnMemorySize": "1024", "SessionApiMemorySize": "128"},
	"x-ray, no alarms, no metrics": {"Tracing": "xray", "Alarms": "false", "TelemetryMetrics": "off"},
	"quotas and budgets": {"Quotas": `{"principal":{"turnsPerMinute":3,"tokensPerDay":100000},"tenant":{"concurrentSessions":50}}`,
		"QuotaFailMode": "open", "QuotaCache": "0", "LedgerRetention": "24h", "ModelMaxOutputTokens": "4000",
		"ModelMaxToolCalls": "8", "ModelMaxWallTime": "2m"},
}

func TestTemplate(t *testing.T) {
	for name, params := range parameterSets {
		t.Run(name, func(t *testing.T) {
			d := load(t, params)
			jwt := params["AuthMode"] == "jwt" || params["ChatPage"] != nil
			bedrock := params["ModelProvider"] == "bedrock"

			fns := d.tpl.GetAllServerlessFunctionResources()
			if len(fns) != len(functions) {
				t.Errorf("template has %d functions, want %d", len(fns), len(functions))
			}
			for fname, want := range functions {
				t.Run(fname, func(t *testing.T) {
					fn, err := d.tpl.GetServerlessFunctionWithName(fname)
					if err != nil {
						t.Fatal(err)
					}
					if deref(fn.Runtime) != "provided.al2023" || !slices.Equal(fn.Architectures, []string{"arm64"}) ||
						deref(fn.Handler) != "bootstrap" || fn.CodeUri == nil || deref(fn.CodeUri.String) != "." {
						t.Errorf("runtime %v, architectures %v, handler %v, code %v; want provided.al2023, [arm64], bootstrap, .",
							deref(fn.Runtime), fn.Architectures, deref(fn.Handler), fn.CodeUri)
					}
					if got := fn.AWSCloudFormationMetadata["BuildMethod"]; got != "makefile" {
						t.Errorf("Metadata.BuildMethod = %v, want makefile (make build-%s)", got, fname)
					}
					url := fn.FunctionUrlConfig
					wantAuth := "AWS_IAM"
					if jwt {
						wantAuth = "NONE"
					}
					if url == nil {
						t.Fatal("no FunctionUrlConfig")
					}
					if url.AuthType != wantAuth || deref(url.InvokeMode) != want.invokeMode {
						t.Errorf("function URL AuthType %s, InvokeMode %s; want %s, %s",
							url.AuthType, deref(url.InvokeMode), wantAuth, want.invokeMode)
					}
					checkCORS(t, fname, d.resourceProperties(fname)["FunctionUrlConfig"], params["AllowedOrigins"])
					checkMemorySize(t, fname, d.resourceProperties(fname)["MemorySize"], params)

					env := d.environment(fname)
					checkEnvironment(t, fname, env)
					cfg := parseConfig(t, fname, env)
					if fname == "TurnFunction" {
						timeout := seconds(fn.Timeout)
						if need := cfg.TurnTimeout + cfg.CleanupReserve; timeout < need {
							t.Errorf("Timeout %v < TURN_TIMEOUT %v + CLEANUP_RESERVE %v", timeout, cfg.TurnTimeout, cfg.CleanupReserve)
						}
						if timeout > 900*time.Second {
							t.Errorf("Timeout %v beyond Lambda's 900 s", timeout)
						}
						if wantTurn := params["TurnTimeout"]; wantTurn != nil && fmt.Sprint(cfg.TurnTimeout.Seconds()) != wantTurn {
							t.Errorf("TURN_TIMEOUT = %v, want %s s", cfg.TurnTimeout, wantTurn)
						}
					}

					statements := policyStatements(t, fn)
					checkTablePolicy(t, statements, want.actions)
					checkBucketPolicy(t, statements, want.s3Actions)
					var modelID string
					if bedrock && fname == "TurnFunction" {
						modelID = fmt.Sprint(params["ModelId"])
					}
					checkBedrockPolicy(t, statements, modelID)
					mcpSecrets, _ := params["McpHeaderSecretArns"].(string)
					checkSecrets(t, fname, env, statements, openAIKeySecret(params), mcpSecrets)

					checkPublicPermissions(t, d, fname, jwt)
				})
			}

			checkTable(t, d, params["TableDeletionProtection"] != "false")
			checkBucket(t, d, params)
			alarms := params["Alarms"] != "false"
			checkAlarms(t, d, params, alarms)
			checkTracing(t, d, params)
			wantOutputs := 6 // the README's "After deploy" reads them
			if alarms {
				wantOutputs++ // DashboardName
			}
			if params["ChatPage"] != nil {
				wantOutputs++ // ChatPageUrl
			}
			if len(d.tpl.Outputs) != wantOutputs {
				t.Errorf("%d outputs, want %d", len(d.tpl.Outputs), wantOutputs)
			}
			if got := d.globalFunction["LoggingConfig"]; !reflect.DeepEqual(got, map[string]any{"LogFormat": "JSON"}) {
				t.Errorf("Globals.Function.LoggingConfig = %v, want LogFormat JSON", got)
			}
			for out, want := range map[string]string{
				"TurnFunctionUrl":       "GetAtt(TurnFunctionUrl.FunctionUrl)",
				"HistoryFunctionUrl":    "GetAtt(HistoryFunctionUrl.FunctionUrl)",
				"ArtifactsFunctionUrl":  "GetAtt(ArtifactsFunctionUrl.FunctionUrl)",
				"TableName":             "Ref(Table)",
				"CursorSecretArn":       "Ref(CursorSecret)",
				"AttachmentsBucketName": "Ref(AttachmentsBucket)",
			} {
				if got := d.tpl.Outputs[out].Value; got != want {
					t.Errorf("output %s = %v, want %s", out, got, want)
				}
			}
		})
	}
}

// defaultMemoryMB are the functions' memory sizes by default: the turn
// function's is the one docs/benchmarks.md ("Memory size and CPU share")
// chose from turnbench's cpushare section.
var defaultMemoryMB = map[string]string{"TurnFunction": "512", "HistoryFunction": "256", "ArtifactsFunction": "256"}

// checkMemorySize: a function's MemorySize is its parameter's
// (TurnMemorySize, SessionApiMemorySize), by default defaultMemoryMB's.
func checkMemorySize(t *testing.T, fname string, got any, params map[string]any) {
	t.Helper()
	param := "SessionApiMemorySize"
	if fname == "TurnFunction" {
		param = "TurnMemorySize"
	}
	want := defaultMemoryMB[fname]
	if v, ok := params[param]; ok {
		want = fmt.Sprint(v)
	}
	if fmt.Sprint(got) != want {
		t.Errorf("MemorySize = %v, want %s (%s)", got, want, param)
	}
}

// TestAuthModeParameter pins that the template cannot deploy dev auth,
// which pkg/auth refuses on Lambda anyway.
func TestAuthModeParameter(t *testing.T) {
	d := load(t, nil)
	allowed, _ := d.raw["Parameters"].(map[string]any)["AuthMode"].(map[string]any)["AllowedValues"].([]any)
	if !reflect.DeepEqual(allowed, []any{"iam", "jwt"}) {
		t.Errorf("AuthMode AllowedValues = %v, want [iam jwt]", allowed)
	}
}

// resourceCondition holds a resource's Condition while intrinsics are
// processed.
const resourceCondition = "XTestCondition"

// deployment is the template as processed under one parameter set.
type deployment struct {
	tpl            *cloudformation.Template
	raw            map[string]any
	globalFunction map[string]any
	// invokedViaURL is each permission's InvokedViaFunctionUrl, which
	// goformation v7.14.9 does not model (it is removed before parsing).
	invokedViaURL map[string]any
}

// load processes template.yaml with params (evaluate) and parses the
// result with goformation.
func load(t *testing.T, params map[string]any) *deployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pre, err := processYAML(data)
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	d := &deployment{invokedViaURL: map[string]any{}}
	d.raw = evaluate(t, pre, params)
	view := map[string]any{}
	for k, v := range d.raw {
		view[k] = v
	}
	kept := map[string]any{}
	for name, r := range d.raw["Resources"].(map[string]any) {
		res := cloneMap(r.(map[string]any))
		if typ, _ := res["Type"].(string); strings.HasPrefix(typ, "AWS::CloudWatch::") {
			// goformation models an alarm's Threshold as a number, which
			// a Ref to a Number parameter is not (a string): the alarms
			// and the dashboard are checked from the raw map
			// (checkAlarms).
			continue
		}
		if props, ok := res["Properties"].(map[string]any); ok {
			props = cloneMap(props)
			// A Ref to a Number parameter (MemorySize) evaluates to a
			// string, which CloudFormation converts and goformation's
			// int field would refuse: convert it here, and let
			// checkMemorySize read the raw map.
			if v, ok := props["MemorySize"].(string); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%s MemorySize %q: %v", name, v, err)
				}
				props["MemorySize"] = n
			}
			// The same for a lifecycle rule's ExpirationInDays (a Ref to
			// AttachmentRetentionDays); checkBucket reads the raw map.
			if lc, ok := props["LifecycleConfiguration"].(map[string]any); ok {
				lc = cloneMap(lc)
				rules, _ := lc["Rules"].([]any)
				converted := make([]any, len(rules))
				for i, r := range rules {
					rule := cloneMap(r.(map[string]any))
					if v, ok := rule["ExpirationInDays"].(string); ok {
						n, err := strconv.Atoi(v)
						if err != nil {
							t.Fatalf("%s ExpirationInDays %q: %v", name, v, err)
						}
						rule["ExpirationInDays"] = n
					}
					converted[i] = rule
				}
				lc["Rules"] = converted
				props["LifecycleConfiguration"] = lc
			}
			if v, ok := props["InvokedViaFunctionUrl"]; ok {
				d.invokedViaURL[name] = v
				delete(props, "InvokedViaFunctionUrl")
			}
			res["Properties"] = props
		}
		kept[name] = res
	}
	view["Resources"] = kept
	d.globalFunction, _ = d.raw["Globals"].(map[string]any)["Function"].(map[string]any)
	delete(view, "Globals") // checked from the raw map: goformation does not model LoggingConfig
	delete(view, "Conditions")
	js, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	d.tpl, err = goformation.ParseJSONWithOptions(js, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	return d
}

// evaluate processes a template in JSON (template.yaml, or the
// CloudFormation the SAM translator makes of it) with params, as
// CloudFormation would: parameters resolve to their values (a
// CommaDelimitedList to a list), conditions are evaluated, a reference to
// a resource becomes "Ref(Name)" and an attribute "GetAtt(Name.Attr)" so
// that policies and outputs can be compared. Resources whose Condition is
// false are dropped, and so is every value that is AWS::NoValue.
func evaluate(t *testing.T, template []byte, params map[string]any) map[string]any {
	t.Helper()
	var tmpl map[string]any
	if err := json.Unmarshal(template, &tmpl); err != nil {
		t.Fatal(err)
	}
	resources := tmpl["Resources"].(map[string]any)
	parameters, _ := tmpl["Parameters"].(map[string]any)
	// goformation replaces a whole map holding a "Condition" key by the
	// condition's value: keep resource conditions aside under another key
	// and apply them below.
	outputs, _ := tmpl["Outputs"].(map[string]any)
	for _, section := range []map[string]any{resources, outputs} {
		for _, r := range section {
			if res, ok := r.(map[string]any); ok {
				if c, ok := res["Condition"]; ok {
					res[resourceCondition] = c
					delete(res, "Condition")
				}
			}
		}
	}
	renamed, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(name string, input, template any) any {
		if s, ok := input.(string); ok {
			if _, isResource := resources[s]; isResource {
				return "Ref(" + s + ")"
			}
		}
		if input == "AWS::Partition" { // not modelled by goformation v7.14.9
			return "aws"
		}
		v := intrinsics.Ref(name, input, template)
		if n, ok := v.(float64); ok { // CloudFormation's Ref yields a Number parameter as a string
			return fmt.Sprint(n)
		}
		if p, ok := parameters[fmt.Sprint(input)].(map[string]any); ok && p["Type"] == "CommaDelimitedList" {
			if s, ok := v.(string); ok {
				var list []any
				for _, item := range strings.Split(s, ",") {
					list = append(list, item)
				}
				return list
			}
		}
		return v
	}
	getAtt := func(_ string, input, _ any) any {
		switch v := input.(type) {
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			return "GetAtt(" + strings.Join(parts, ".") + ")"
		case string:
			return "GetAtt(" + v + ")"
		}
		return nil
	}
	subVar := regexp.MustCompile(`\$\{([A-Za-z0-9:.]+)\}`)
	// Fn::Sub takes a string, or [string, {variable: value}] whose
	// variables win over parameters and resources of the same name.
	sub := func(_ string, input, template any) any {
		s, ok := input.(string)
		var vars map[string]any
		if arr, isList := input.([]any); isList && len(arr) == 2 {
			s, ok = arr[0].(string)
			vars, _ = arr[1].(map[string]any)
			ok = ok && vars != nil
		}
		if !ok {
			t.Fatalf("Fn::Sub %v: want a string or [string, variables]", input)
		}
		return subVar.ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			if v, ok := vars[name]; ok {
				return fmt.Sprint(v)
			}
			if resource, attr, isAttr := strings.Cut(name, "."); isAttr {
				return getAtt("", []any{resource, attr}, nil).(string)
			}
			return fmt.Sprint(ref("Ref", name, template))
		})
	}
	// goformation's Fn::Split yields a []string, which its Fn::Select does
	// not index: split into []any, as JSON would. CloudFormation takes only
	// a literal string as the delimiter.
	split := func(_ string, input, _ any) any {
		arr, ok := input.([]any)
		if !ok || len(arr) != 2 {
			t.Fatalf("Fn::Split %v: want [delimiter, string]", input)
		}
		delim, ok1 := arr[0].(string)
		str, ok2 := arr[1].(string)
		if !ok1 || !ok2 {
			t.Fatalf("Fn::Split %v: unresolved arguments", input)
		}
		// A function URL is https://<host>/: its placeholder splits as one,
		// the host being GetAtt(<url>.FunctionUrl.Host).
		if strings.HasPrefix(str, "GetAtt(") && strings.HasSuffix(str, ".FunctionUrl)") {
			str = "https://" + strings.TrimSuffix(str, ")") + ".Host)/"
		}
		var out []any
		for _, part := range strings.Split(str, delim) {
			out = append(out, part)
		}
		return out
	}
	selectFn := func(_ string, input, _ any) any {
		arr, ok := input.([]any)
		if !ok || len(arr) != 2 {
			t.Fatalf("Fn::Select %v: want [index, list]", input)
		}
		list, ok := arr[1].([]any)
		idx, err := strconv.Atoi(fmt.Sprint(arr[0]))
		if !ok || err != nil || idx < 0 || idx >= len(list) {
			// CloudFormation fails the stack on an index out of bounds.
			t.Fatalf("Fn::Select %v: index out of bounds or not a list", input)
		}
		return list[idx]
	}
	out, err := intrinsics.ProcessJSON(renamed, &intrinsics.ProcessorOptions{
		ParameterOverrides: params,
		EvaluateConditions: true,
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref": ref, "Fn::GetAtt": getAtt, "Fn::Sub": sub, "Fn::Split": split, "Fn::Select": selectFn,
		},
	})
	if err != nil {
		t.Fatalf("process the template: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	kept := map[string]any{}
	for name, r := range raw["Resources"].(map[string]any) {
		res := cloneMap(r.(map[string]any))
		if c, ok := res[resourceCondition]; ok {
			v, found := raw["Conditions"].(map[string]any)[fmt.Sprint(c)]
			if !found {
				t.Fatalf("resource %s: unknown condition %v", name, c)
			}
			if v != true {
				continue
			}
			delete(res, resourceCondition)
		}
		kept[name] = dropNoValue(res)
	}
	raw["Resources"] = kept
	if outs, ok := raw["Outputs"].(map[string]any); ok {
		for name, o := range outs {
			out, ok := o.(map[string]any)
			if !ok {
				continue
			}
			if c, ok := out[resourceCondition]; ok {
				if raw["Conditions"].(map[string]any)[fmt.Sprint(c)] != true {
					delete(outs, name)
					continue
				}
				delete(out, resourceCondition)
			}
		}
	}
	return raw
}

// dropNoValue removes what AWS::NoValue left (a null) from v: a list
// element or a map entry, as CloudFormation removes the element or the
// property.
func dropNoValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = dropNoValue(e)
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e != nil {
				out = append(out, dropNoValue(e))
			}
		}
		return out
	}
	return v
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// environment returns fname's variables as SAM deploys them: Globals
// merged with the function's own, the function's winning.
func (d *deployment) environment(fname string) map[string]string {
	env := map[string]string{}
	add := func(vars map[string]any) {
		for k, v := range vars {
			env[k] = fmt.Sprint(v)
		}
	}
	if e, ok := d.globalFunction["Environment"].(map[string]any); ok {
		vars, _ := e["Variables"].(map[string]any)
		add(vars)
	}
	fn, _ := d.tpl.GetServerlessFunctionWithName(fname)
	if fn.Environment != nil {
		for k, v := range fn.Environment.Variables {
			env[k] = v
		}
	}
	return env
}

func checkEnvironment(t *testing.T, fname string, env map[string]string) {
	t.Helper()
	for _, v := range config.Variables {
		if _, ok := env[v]; !ok && (fname == "TurnFunction" || !slices.Contains(turnOnlyVariables, v)) {
			t.Errorf("%s does not set %s (config.Variables)", fname, v)
		}
	}
	for k := range env {
		if !slices.Contains(config.Variables, k) && !slices.Contains(config.OptionalVariables, k) {
			t.Errorf("%s sets %s, which pkg/config does not read", fname, k)
		}
		if slices.Contains(config.RuntimeVariables, k) {
			t.Errorf("%s sets %s, reserved for the Lambda runtime", fname, k)
		}
	}
	if env["ATTACHMENTS_BUCKET"] != "Ref(AttachmentsBucket)" {
		t.Errorf("ATTACHMENTS_BUCKET = %q, want the bucket's name (Ref AttachmentsBucket)", env["ATTACHMENTS_BUCKET"])
	}
	if env["TABLE_NAME"] != "Ref(Table)" {
		t.Errorf("TABLE_NAME = %q, want the table's name (Ref Table)", env["TABLE_NAME"])
	}
	// No secret in the environment: the history function reads the cursor
	// key by ARN, the others issue no cursors.
	if env["CURSOR_SECRET"] != "" {
		t.Errorf("CURSOR_SECRET = %q, want it empty (a secret in the environment is readable with lambda:GetFunctionConfiguration)", env["CURSOR_SECRET"])
	}
	wantARN := ""
	if fname == "HistoryFunction" {
		wantARN = "Ref(CursorSecret)"
	}
	if env["CURSOR_SECRET_ARN"] != wantARN {
		t.Errorf("CURSOR_SECRET_ARN = %q, want %q", env["CURSOR_SECRET_ARN"], wantARN)
	}
	for k, v := range env {
		if strings.Contains(v, "{{resolve:") {
			t.Errorf("%s = %q resolves a secret into the environment", k, v)
		}
	}
}

// checkCORS: without AllowedOrigins a function URL has no CORS
// configuration (no web page of another origin may read its answers);
// with it, exactly those origins, and on the turn function the request
// headers its handler reads and the compact stream's header exposed
// (clients/js reads it back).
func checkCORS(t *testing.T, fname string, urlConfig, origins any) {
	t.Helper()
	cors, _ := urlConfig.(map[string]any)["Cors"].(map[string]any)
	if origins == nil {
		if cors != nil {
			t.Errorf("CORS %v without AllowedOrigins, want none", cors)
		}
		return
	}
	if cors == nil {
		t.Fatalf("no CORS with AllowedOrigins %v", origins)
	}
	list := func(key string) []string {
		var out []string
		for _, v := range cors[key].([]any) {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	if got, want := list("AllowOrigins"), strings.Split(fmt.Sprint(origins), ","); !slices.Equal(got, want) {
		t.Errorf("CORS AllowOrigins %v, want %v", got, want)
	}
	if fname != "TurnFunction" {
		return
	}
	for _, h := range []string{api.SnapshotScopeHeader, api.StreamModeHeader} {
		if got := list("AllowHeaders"); !slices.Contains(got, strings.ToLower(h)) {
			t.Errorf("CORS AllowHeaders %v lack %s", got, strings.ToLower(h))
		}
	}
	if got := list("ExposeHeaders"); !slices.Contains(got, strings.ToLower(api.StreamModeHeader)) {
		t.Errorf("CORS ExposeHeaders %v lack %s", got, strings.ToLower(api.StreamModeHeader))
	}
}

// resourceProperties returns the evaluated Properties of resource name.
func (d *deployment) resourceProperties(name string) map[string]any {
	res, _ := d.raw["Resources"].(map[string]any)[name].(map[string]any)
	props, _ := res["Properties"].(map[string]any)
	return props
}

// testMcpSecretARNs is the McpHeaderSecretArns of a parameter set.
const testMcpSecretARNs = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-docs-AbCdEf,arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-crm-GhIjKl"

// testOpenAIKeySecretARN is the OpenAIApiKeySecretArn of a parameter set.
const testOpenAIKeySecretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:openai-key-AbCdEf"

// openAIKeySecret is the secret the turn function reads its OpenAI key
// from under params, as the environment and a policy name it: the given
// secret's ARN, the stack's own secret when only the key was given, or
// none.
func openAIKeySecret(params map[string]any) string {
	if arn, _ := params["OpenAIApiKeySecretArn"].(string); arn != "" {
		return arn
	}
	if key, _ := params["OpenAIApiKey"].(string); key != "" {
		return "Ref(OpenAIApiKeySecret)"
	}
	return ""
}

// checkSecrets: no function has a provider key in its environment; only
// the turn function names the OpenAI key's secret (openAISecret, "" for
// none), and only it may read that secret and the MCP servers' header
// secrets (mcpSecrets, comma-separated ARNs; "" for none), in a
// statement of their own; only the history function may read the cursor
// secret. Each grant is secretsmanager:GetSecretValue on those secrets.
func checkSecrets(t *testing.T, fname string, env map[string]string, statements []statement, openAISecret, mcpSecrets string) {
	t.Helper()
	if env["OPENAI_API_KEY"] != "" {
		t.Errorf("OPENAI_API_KEY = %q, want it empty: a key in the environment is readable with lambda:GetFunctionConfiguration", env["OPENAI_API_KEY"])
	}
	var wantEnv, want string
	switch fname {
	case "HistoryFunction":
		want = "Ref(CursorSecret)"
	case "TurnFunction":
		wantEnv, want = openAISecret, openAISecret
	}
	if env["OPENAI_API_KEY_SECRET_ARN"] != wantEnv {
		t.Errorf("OPENAI_API_KEY_SECRET_ARN = %q, want %q", env["OPENAI_API_KEY_SECRET_ARN"], wantEnv)
	}
	var got []statement
	audience := env["JWT_AUDIENCE_SECRET"] // ChatPage cognito: every function reads it at start
	for _, s := range statements {
		if s.Sid == "ReadPageClientId" {
			want := "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + audience + "-??????"
			if audience == "" || !slices.Equal(s.Action, []string{"secretsmanager:GetSecretValue"}) ||
				!slices.Equal(s.Resource, []string{want}) || s.Condition != nil {
				t.Errorf("page client id statement %+v, want GetSecretValue on %s, only with JWT_AUDIENCE_SECRET", s, want)
			}
			audience = "" // seen
			continue
		}
		if s.Sid == "TurnMcpHeaderSecrets" {
			if fname != "TurnFunction" || !slices.Equal(s.Action, []string{"secretsmanager:GetSecretValue"}) ||
				strings.Join(s.Resource, ",") != mcpSecrets || s.Condition != nil {
				t.Errorf("MCP header secrets statement %+v, want GetSecretValue on %s in the turn function", s, mcpSecrets)
			}
			mcpSecrets = "" // seen
			continue
		}
		for _, a := range s.Action {
			if strings.HasPrefix(strings.ToLower(a), "secretsmanager:") {
				got = append(got, s)
				break
			}
		}
	}
	if audience != "" {
		t.Errorf("JWT_AUDIENCE_SECRET %s, but no statement grants reading it", audience)
	}
	if fname == "TurnFunction" && mcpSecrets != "" {
		t.Errorf("no statement grants the MCP header secrets %s", mcpSecrets)
	}
	if want == "" {
		if len(got) != 0 {
			t.Errorf("Secrets Manager statements %+v, want none", got)
		}
		return
	}
	if len(got) != 1 || !slices.Equal(got[0].Action, []string{"secretsmanager:GetSecretValue"}) ||
		!slices.Equal(got[0].Resource, []string{want}) || got[0].Condition != nil {
		t.Errorf("Secrets Manager statements %+v, want one: GetSecretValue on %s", got, want)
	}
}

// parseConfig checks that pkg/config accepts the function's environment
// as deployed (the table name and the secret's ARN are resolved by
// CloudFormation; placeholders stand in for them).
func parseConfig(t *testing.T, fname string, env map[string]string) config.Config {
	t.Helper()
	resolved := map[string]string{
		"TABLE_NAME": "turnstream-Table-ABC123", "AWS_LAMBDA_FUNCTION_NAME": "fn", "AWS_REGION": "us-east-1",
		"ATTACHMENTS_BUCKET": "turnstream-attachmentsbucket-abc123",
	}
	if env["CURSOR_SECRET_ARN"] != "" {
		resolved["CURSOR_SECRET_ARN"] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:CursorSecret-AbCdEf"
	}
	if strings.HasPrefix(env["OPENAI_API_KEY_SECRET_ARN"], "Ref(") {
		resolved["OPENAI_API_KEY_SECRET_ARN"] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:OpenAIApiKeySecret-AbCdEf"
	}
	cfg, err := config.FromLookup(func(k string) (string, bool) {
		if v, ok := resolved[k]; ok {
			return v, true
		}
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		t.Fatalf("pkg/config rejects the template's environment: %v", err)
	}
	if fname == "HistoryFunction" {
		// What functions/history does at start once it has read the secret.
		if err := cfg.SetCursorSecret([]byte("0123456789abcdef0123456789abcdef")); err != nil {
			t.Fatal(err)
		}
		if err := cfg.RequireCursorSecret(); err != nil {
			t.Error(err)
		}
	}
	return cfg
}

// statement is one IAM policy statement; Action and Resource may be a
// string or a list in the template.
type statement struct {
	Sid       string
	Effect    string
	Action    stringList
	Resource  stringList
	Condition map[string]map[string]any
}

type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = stringList{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// policyStatements returns the statements of fn's inline policy documents.
// A managed policy or SAM policy template fails the test: grants must be
// explicit to be compared with the code.
func policyStatements(t *testing.T, fn *serverless.Function) []statement {
	t.Helper()
	if fn.Policies == nil || fn.Policies.IAMPolicyDocumentArray == nil {
		t.Fatal("Policies is not a list of inline policy documents")
	}
	var out []statement
	for _, doc := range *fn.Policies.IAMPolicyDocumentArray {
		for _, raw := range doc.Statement {
			b, err := json.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			var s statement
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("policy statement %s: %v", b, err)
			}
			if s.Effect != "Allow" {
				t.Errorf("statement %s: Effect %s", b, s.Effect)
			}
			out = append(out, s)
		}
	}
	return out
}

// checkTablePolicy checks that the DynamoDB actions granted are exactly
// want (dynamo.*FunctionActions), on the table and its indexes only.
func checkTablePolicy(t *testing.T, statements []statement, want []string) {
	t.Helper()
	var got []string
	for _, s := range statements {
		var dyn []string
		for _, a := range s.Action {
			if strings.HasPrefix(strings.ToLower(a), "dynamodb:") {
				dyn = append(dyn, a)
			}
		}
		if len(dyn) == 0 {
			continue
		}
		got = append(got, dyn...)
		if wantRes := []string{"GetAtt(Table.Arn)", "GetAtt(Table.Arn)/index/*"}; !slices.Equal(s.Resource, wantRes) {
			t.Errorf("DynamoDB statement resources %v, want %v", s.Resource, wantRes)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("DynamoDB actions %v, want exactly the code's %v", got, want)
	}
}

// checkBucketPolicy checks that the S3 actions granted are exactly want
// (the code's list): s3:ListBucket on the attachments bucket itself, every
// other action on its attachments/ keys only.
func checkBucketPolicy(t *testing.T, statements []statement, want []string) {
	t.Helper()
	var got []string
	for _, s := range statements {
		for _, a := range s.Action {
			if !strings.HasPrefix(strings.ToLower(a), "s3:") {
				continue
			}
			got = append(got, a)
			wantRes := []string{"GetAtt(AttachmentsBucket.Arn)/attachments/*"}
			if a == "s3:ListBucket" {
				wantRes = []string{"GetAtt(AttachmentsBucket.Arn)"}
			}
			if !slices.Equal(s.Resource, wantRes) || s.Condition != nil {
				t.Errorf("%s on %v (condition %v), want on %v", a, s.Resource, s.Condition, wantRes)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("S3 actions %v, want exactly the code's %v", got, want)
	}
}

// checkBucket checks the attachments bucket (docs/attachments.md):
// encrypted, public access blocked, objects owned by the bucket's
// account, no versioning (a deleted session's files must go), retained
// with the stack, TLS required by its policy, its lifecycle rule on when
// AttachmentRetentionDays is set, and CORS for AllowedOrigins only.
func checkBucket(t *testing.T, d *deployment, params map[string]any) {
	t.Helper()
	res, _ := d.raw["Resources"].(map[string]any)["AttachmentsBucket"].(map[string]any)
	if res["Type"] != "AWS::S3::Bucket" || res["DeletionPolicy"] != "Retain" || res["UpdateReplacePolicy"] != "Retain" {
		t.Fatalf("AttachmentsBucket: type %v, DeletionPolicy %v, UpdateReplacePolicy %v; want a retained AWS::S3::Bucket",
			res["Type"], res["DeletionPolicy"], res["UpdateReplacePolicy"])
	}
	props := d.resourceProperties("AttachmentsBucket")
	get := func(v any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				m, _ := v.(map[string]any)
				v = m[k]
			case int:
				l, _ := v.([]any)
				if k >= len(l) {
					return nil
				}
				v = l[k]
			}
		}
		return v
	}
	if got := get(props, "BucketEncryption", "ServerSideEncryptionConfiguration", 0, "ServerSideEncryptionByDefault", "SSEAlgorithm"); got != "AES256" {
		t.Errorf("encryption %v, want AES256", got)
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if got := get(props, "PublicAccessBlockConfiguration", k); got != true {
			t.Errorf("PublicAccessBlockConfiguration.%s = %v, want true", k, got)
		}
	}
	if got := get(props, "OwnershipControls", "Rules", 0, "ObjectOwnership"); got != "BucketOwnerEnforced" {
		t.Errorf("ObjectOwnership %v, want BucketOwnerEnforced", got)
	}
	if v := props["VersioningConfiguration"]; v != nil {
		t.Errorf("VersioningConfiguration %v, want none", v)
	}
	rule := get(props, "LifecycleConfiguration", "Rules", 0)
	days := fmt.Sprint(params["AttachmentRetentionDays"])
	if params["AttachmentRetentionDays"] == nil || days == "0" {
		if get(rule, "Status") != "Disabled" {
			t.Errorf("lifecycle rule %v, want Disabled without AttachmentRetentionDays", rule)
		}
	} else if get(rule, "Status") != "Enabled" || fmt.Sprint(get(rule, "ExpirationInDays")) != days || get(rule, "Prefix") != "attachments/" {
		t.Errorf("lifecycle rule %v, want attachments/ expiring after %s days", rule, days)
	}
	cors := get(props, "CorsConfiguration", "CorsRules", 0)
	if origins := params["AllowedOrigins"]; origins == nil {
		if props["CorsConfiguration"] != nil {
			t.Errorf("bucket CORS %v without AllowedOrigins", props["CorsConfiguration"])
		}
	} else if fmt.Sprint(get(cors, "AllowedOrigins")) != fmt.Sprint(strings.Split(fmt.Sprint(origins), ",")) ||
		fmt.Sprint(get(cors, "AllowedMethods")) != "[GET POST]" {
		t.Errorf("bucket CORS %v, want GET and POST from %v", cors, origins)
	}

	policy := d.resourceProperties("AttachmentsBucketPolicy")
	if policy["Bucket"] != "Ref(AttachmentsBucket)" {
		t.Fatalf("bucket policy on %v", policy["Bucket"])
	}
	deny := get(policy, "PolicyDocument", "Statement", 0)
	if get(deny, "Effect") != "Deny" || get(deny, "Principal") != "*" || get(deny, "Action") != "s3:*" ||
		fmt.Sprint(get(deny, "Condition", "Bool", "aws:SecureTransport")) != "false" ||
		fmt.Sprint(get(deny, "Resource")) != "[GetAtt(AttachmentsBucket.Arn) GetAtt(AttachmentsBucket.Arn)/*]" {
		t.Errorf("bucket policy statement %v, want every request without TLS denied", deny)
	}
}

// Bedrock cross-Region inference profile id prefixes (geographies) the
// template recognises.
var inferenceProfilePrefixes = []string{"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"}

// checkBedrockPolicy checks the turn function's Bedrock grants for
// modelID ("" when the deployment has no Bedrock model: no grant at all).
// Only bedrock:InvokeModelWithResponseStream is granted (ConverseStream's
// action). A plain model id gets exactly its foundation model in the
// stack's region. An inference profile id gets the profile in the stack's
// region and its foundation model (the id without the prefix) in every
// region, the region-less ARN of global profiles included, each only
// through that profile (bedrock:InferenceProfileArn).
func checkBedrockPolicy(t *testing.T, statements []statement, modelID string) {
	t.Helper()
	var got []statement
	for _, s := range statements {
		for _, a := range s.Action {
			if strings.HasPrefix(a, "bedrock:") {
				got = append(got, s)
				break
			}
		}
	}
	for _, s := range got {
		if !slices.Equal(s.Action, []string{"bedrock:InvokeModelWithResponseStream"}) {
			t.Errorf("statement %s: actions %v, want only bedrock:InvokeModelWithResponseStream", s.Sid, s.Action)
		}
	}
	const region, account = "us-east-1", "123456789012"
	if modelID == "" {
		if len(got) != 0 {
			t.Errorf("Bedrock statements %+v, want none", got)
		}
		return
	}
	prefix, model, _ := strings.Cut(modelID, ".")
	if !slices.Contains(inferenceProfilePrefixes, prefix) {
		want := []string{"arn:aws:bedrock:" + region + "::foundation-model/" + modelID}
		if len(got) != 1 || !slices.Equal(got[0].Resource, want) || got[0].Condition != nil {
			t.Errorf("Bedrock statements %+v, want one on %v without a condition", got, want)
		}
		return
	}
	profile := "arn:aws:bedrock:" + region + ":" + account + ":inference-profile/" + modelID
	if len(got) != 2 {
		t.Fatalf("Bedrock statements %+v, want two (the profile, its foundation model)", got)
	}
	if !slices.Equal(got[0].Resource, []string{profile}) || got[0].Condition != nil {
		t.Errorf("profile statement %+v, want %s without a condition", got[0], profile)
	}
	wantModels := []string{"arn:aws:bedrock:*::foundation-model/" + model, "arn:aws:bedrock:::foundation-model/" + model}
	if !slices.Equal(got[1].Resource, wantModels) {
		t.Errorf("foundation model resources %v, want %v", got[1].Resource, wantModels)
	}
	wantCond := map[string]map[string]any{"StringEquals": {"bedrock:InferenceProfileArn": profile}}
	if !reflect.DeepEqual(got[1].Condition, wantCond) {
		t.Errorf("foundation model condition %v, want %v", got[1].Condition, wantCond)
	}
}

// checkPublicPermissions: in jwt mode (AuthType NONE) each function URL
// needs lambda:InvokeFunctionUrl for everyone and lambda:InvokeFunction
// restricted to calls through the URL; in iam mode neither exists.
func checkPublicPermissions(t *testing.T, d *deployment, fname string, jwt bool) {
	t.Helper()
	var urlPerm, invokePerm bool
	for name, p := range d.tpl.GetAllLambdaPermissionResources() {
		if p.FunctionName != "Ref("+fname+")" {
			continue
		}
		switch {
		case p.Action == "lambda:InvokeFunctionUrl" && p.Principal == "*" && deref(p.FunctionUrlAuthType) == "NONE":
			urlPerm = true
		case p.Action == "lambda:InvokeFunction" && p.Principal == "*" && d.invokedViaURL[name] == true:
			invokePerm = true
		default:
			t.Errorf("permission %s on %s: %+v (InvokedViaFunctionUrl %v)", name, fname, p, d.invokedViaURL[name])
		}
	}
	if urlPerm != jwt || invokePerm != jwt {
		t.Errorf("public URL permissions (InvokeFunctionUrl %v, InvokeFunction via URL %v), want %v", urlPerm, invokePerm, jwt)
	}
}

// checkTable compares the table with dynamo.CreateTableInput, the layout
// the store creates in tests and the dev server (docs/design.md#storage-one-dynamodb-table).
func checkTable(t *testing.T, d *deployment, protect bool) {
	t.Helper()
	tables := d.tpl.GetAllDynamoDBTableResources()
	if len(tables) != 1 {
		t.Fatalf("%d tables, want 1", len(tables))
	}
	tbl, err := d.tpl.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	want := dynamo.CreateTableInput("x")
	if deref(tbl.BillingMode) != string(want.BillingMode) {
		t.Errorf("BillingMode %v, want %s", deref(tbl.BillingMode), want.BillingMode)
	}
	var gotAttrs, wantAttrs []string
	for _, a := range tbl.AttributeDefinitions {
		gotAttrs = append(gotAttrs, a.AttributeName+":"+a.AttributeType)
	}
	for _, a := range want.AttributeDefinitions {
		wantAttrs = append(wantAttrs, deref(a.AttributeName)+":"+string(a.AttributeType))
	}
	slices.Sort(gotAttrs)
	slices.Sort(wantAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("attributes %v, want %v", gotAttrs, wantAttrs)
	}
	var gotKeys, wantKeys []string
	for _, k := range tbl.KeySchema {
		gotKeys = append(gotKeys, k.AttributeName+":"+k.KeyType)
	}
	for _, k := range want.KeySchema {
		wantKeys = append(wantKeys, deref(k.AttributeName)+":"+string(k.KeyType))
	}
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("key schema %v, want %v", gotKeys, wantKeys)
	}
	var gotIdx, wantIdx []string
	for _, i := range tbl.LocalSecondaryIndexes {
		s := i.IndexName + "=" + deref(i.Projection.ProjectionType) + strings.Join(i.Projection.NonKeyAttributes, "+")
		for _, k := range i.KeySchema {
			s += "," + k.AttributeName + ":" + k.KeyType
		}
		gotIdx = append(gotIdx, s)
	}
	for _, i := range want.LocalSecondaryIndexes {
		s := deref(i.IndexName) + "=" + string(i.Projection.ProjectionType) + strings.Join(i.Projection.NonKeyAttributes, "+")
		for _, k := range i.KeySchema {
			s += "," + deref(k.AttributeName) + ":" + string(k.KeyType)
		}
		wantIdx = append(wantIdx, s)
	}
	slices.Sort(gotIdx)
	slices.Sort(wantIdx)
	if !slices.Equal(gotIdx, wantIdx) {
		t.Errorf("local secondary indexes %v, want %v", gotIdx, wantIdx)
	}
	if len(tbl.GlobalSecondaryIndexes) != len(want.GlobalSecondaryIndexes) {
		t.Errorf("%d global secondary indexes, want %d", len(tbl.GlobalSecondaryIndexes), len(want.GlobalSecondaryIndexes))
	}
	if ttl := tbl.TimeToLiveSpecification; ttl == nil || deref(ttl.AttributeName) != dynamo.AttrPurgeAt || !ttl.Enabled {
		t.Errorf("TTL %+v, want enabled on %s", ttl, dynamo.AttrPurgeAt)
	}
	if p := tbl.PointInTimeRecoverySpecification; p == nil || !derefBool(p.PointInTimeRecoveryEnabled) {
		t.Errorf("point-in-time recovery %+v, want enabled", p)
	}
	if got := derefBool(tbl.DeletionProtectionEnabled); got != protect {
		t.Errorf("DeletionProtectionEnabled %v, want %v", got, protect)
	}
	if tbl.AWSCloudFormationDeletionPolicy != "Retain" || tbl.AWSCloudFormationUpdateReplacePolicy != "Retain" {
		t.Errorf("DeletionPolicy %q, UpdateReplacePolicy %q, want Retain for both",
			tbl.AWSCloudFormationDeletionPolicy, tbl.AWSCloudFormationUpdateReplacePolicy)
	}
}

func seconds(n *int) time.Duration {
	if n == nil {
		return 0
	}
	return time.Duration(*n) * time.Second
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// deref and derefBool are what p points to, or the zero value.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefBool(p *bool) bool { return p != nil && *p }

// yamlMu serializes goformation's intrinsics.ProcessYAML: every call
// registers the short-form tags in a package-level map, which the YAML
// decoding then reads, so two parallel tests calling it race (the race
// detector caught TestTableLayoutRecorded and TestREADMEDeployCommands).
var yamlMu sync.Mutex

// processYAML is intrinsics.ProcessYAML of data with the short forms
// converted and nothing evaluated, one call at a time.
func processYAML(data []byte) ([]byte, error) {
	yamlMu.Lock()
	defer yamlMu.Unlock()
	return intrinsics.ProcessYAML(data, &intrinsics.ProcessorOptions{NoProcess: true})
}
