package deploytest_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatPagePaths runs the distribution's CloudFront Function (the
// template's ChatPagePaths, cloudfront-js-2.0) under Node.js on viewer
// requests: a function's path prefix is removed so that each handler sees
// "/" as its root, and every other path reaches the history function (the
// page) unchanged.
func TestChatPagePaths(t *testing.T) {
	node := requireTool(t, "node", "Node.js")
	d := load(t, map[string]any{"ChatPage": "cognito", "CognitoDomainPrefix": "turnstream-chat"})
	code, _ := d.resourceProperties("ChatPagePaths")["FunctionCode"].(string)
	if !strings.Contains(code, "function handler(event)") {
		t.Fatalf("ChatPagePaths has no handler: %q", code)
	}
	cases := map[string]string{
		"/turn/":                          "/",
		"/turn/stop":                      "/stop",
		"/turn/capabilities":              "/capabilities",
		"/history/sessions":               "/sessions",
		"/history/sessions/s1/turns":      "/sessions/s1/turns",
		"/artifacts/sessions/s1/turns/t1": "/sessions/s1/turns/t1",
		"/":                               "/",
		"/app.js":                         "/app.js",
		"/config.json":                    "/config.json",
		"/turnx/":                         "/turnx/",
		"/history":                        "/history",
		"/x/turn/":                        "/x/turn/",
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	harness := code + `
const cases = ` + string(in) + `;
const out = {};
for (const uri of Object.keys(cases)) {
  const req = handler({ request: { method: "GET", uri, headers: { host: { value: "d1.cloudfront.net" } }, querystring: { a: { value: "1" } } } });
  if (req.querystring.a.value !== "1" || req.headers.host.value !== "d1.cloudfront.net") throw new Error("the request changed beyond its uri");
  out[uri] = req.uri;
}
console.log(JSON.stringify(out));
`
	file := filepath.Join(t.TempDir(), "paths.js")
	if err := os.WriteFile(file, []byte(harness), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(node, file).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var uris map[string]string
	if err := json.Unmarshal(got, &uris); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	for uri, want := range cases {
		if uris[uri] != want {
			t.Errorf("%s became %s, want %s", uri, uris[uri], want)
		}
	}
}
