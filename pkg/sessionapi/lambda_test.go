package sessionapi_test

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
)

var (
	//go:embed testdata/function-url-get-turns.json
	getTurnsEvent []byte
	//go:embed testdata/function-url-put-artifacts-base64.json
	putArtifactsEvent []byte
)

func loadEvent(t *testing.T, raw []byte) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("decode event: %v", err)
	}
	return ev
}

// TestFunctionURL serves function URL events (payload format 2.0) through
// NewFunctionURLHandler, the adapter the mains pass to lambda.Start.
func TestFunctionURL(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurns("s1", alice, "t", 2)
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		history := sessionapi.NewFunctionURLHandler(f.history)
		artifacts := sessionapi.NewFunctionURLHandler(f.artifacts)
		ctx := lambdacontext.NewContext(f.ctx, &lambdacontext.LambdaContext{AwsRequestID: "lambda-request-1"})

		t.Run("GET turns", func(t *testing.T) {
			resp, err := history(ctx, loadEvent(t, getTurnsEvent))
			if err != nil {
				t.Fatal(err)
			}
			page := decode[sessionapi.TurnPage](t, "GET turns", response{status: resp.StatusCode, header: header(resp), body: []byte(resp.Body)})
			if got := ids(page.Turns); len(got) != 1 || got[0] != "t-000" || !page.HasMore {
				t.Fatalf("page %v hasMore %v", got, page.HasMore)
			}
			if resp.IsBase64Encoded {
				t.Error("JSON response base64-encoded")
			}
			if !strings.Contains(f.logs.String(), `"requestId":"lambda-request-1"`) {
				t.Errorf("log lacks the Lambda request id: %s", f.logs)
			}
		})

		t.Run("PUT base64 body", func(t *testing.T) {
			resp, err := artifacts(ctx, loadEvent(t, putArtifactsEvent))
			if err != nil {
				t.Fatal(err)
			}
			want := `{"artifacts":[{"entryPath":"reports/index.html","artifactType":"document"}]}`
			if resp.StatusCode != http.StatusOK || resp.Body != want {
				t.Fatalf("PUT: %d %s, want %s", resp.StatusCode, resp.Body, want)
			}
			stored, err := f.store.GetArtifacts(f.ctx, "s1", "t1", alice)
			if err != nil || len(stored) != 1 || stored[0].ArtifactType != chat.ArtifactDocument {
				t.Fatalf("stored %v, %v", stored, err)
			}
		})

		rejected := map[string]struct {
			edit   func(*events.APIGatewayV2HTTPRequest)
			status int
			code   string
		}{
			"bad base64 body": {func(ev *events.APIGatewayV2HTTPRequest) { ev.Body = "not base64!" }, 400, protocol.CodeRequestInvalidBody},
			"bad base64, unauthenticated first": {func(ev *events.APIGatewayV2HTTPRequest) {
				ev.Body = "not base64!"
				ev.Headers["authorization"] = "Basic eA=="
			}, 401, protocol.CodeRequestUnauthenticated},
			"bad base64, untrusted first": {func(ev *events.APIGatewayV2HTTPRequest) {
				ev.Body = "not base64!"
				ev.Headers["authorization"] = "Bearer dev.alice"
			}, 403, protocol.CodeRequestForbidden},
			"base64 of an invalid document": {func(ev *events.APIGatewayV2HTTPRequest) {
				ev.Body = "eyJhcnRpZmFjdHMiOm51bGx9" // {"artifacts":null}
			}, 400, protocol.CodeRequestInvalidBody},
			"base64 text/plain": {func(ev *events.APIGatewayV2HTTPRequest) { ev.Headers["content-type"] = "text/plain" }, 415, protocol.CodeRequestUnsupportedMediaType},
			"path not a URL": {func(ev *events.APIGatewayV2HTTPRequest) {
				ev.RawPath = "/sessions/%zz/turns/t1/artifacts"
				ev.RequestContext.HTTP.Path = ev.RawPath
			}, 404, protocol.CodeRequestNotFound},
		}
		for name, tc := range rejected {
			t.Run(name, func(t *testing.T) {
				ev := loadEvent(t, putArtifactsEvent)
				tc.edit(&ev)
				resp, err := artifacts(ctx, ev)
				if err != nil {
					t.Fatalf("invocation failed: %v", err)
				}
				wantError(t, name, response{status: resp.StatusCode, header: header(resp), body: []byte(resp.Body)}, tc.status, tc.code)
			})
		}
	})
}

func header(resp events.APIGatewayV2HTTPResponse) http.Header {
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	return h
}

// TestLogs checks the one JSON log line per request: request id, route,
// status and the validated session id, never message text nor unvalidated
// input.
func TestLogs(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		f.runTurn("s1", alice, turnSpec{id: "t1"})
		f.logs.Reset()
		f.do(f.history, get("/sessions/s1/messages", alice))
		f.do(f.history, get("/sessions/evil%22id%0A/turns?cursor=SECRET-INPUT", alice))
		f.do(f.artifacts, put(artifactsPath, host, `{"artifacts":[{"entryPath":"SECRET-PATH","artifactType":"nope"}]}`))

		lines := strings.Split(strings.TrimSpace(f.logs.String()), "\n")
		if len(lines) != 3 {
			t.Fatalf("%d log lines, want 3: %s", len(lines), f.logs)
		}
		var first map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
			t.Fatalf("log line is not JSON: %s", lines[0])
		}
		for key, want := range map[string]any{"msg": "request", "route": "messages", "sessionId": "s1", "status": float64(200), "method": "GET"} {
			if first[key] != want {
				t.Errorf("log %s = %v, want %v", key, first[key], want)
			}
		}
		if id, _ := first["requestId"].(string); !strings.HasPrefix(id, "local-") {
			t.Errorf("requestId %q", id)
		}
		for _, leak := range []string{"question t1", "answer t1", "evil", "SECRET"} {
			if strings.Contains(f.logs.String(), leak) {
				t.Errorf("log contains %q: %s", leak, f.logs)
			}
		}
		if !strings.Contains(lines[2], `"turnId":"t1"`) || !strings.Contains(lines[2], `"status":400`) {
			t.Errorf("artifacts log line %s", lines[2])
		}
	})
}
