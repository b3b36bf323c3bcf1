package deploytest_test

import (
	"encoding/json"
	"fmt"
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
		"/uploads/":                       "/",
		"/uploads/attachments/o1/s1/a1":   "/attachments/o1/s1/a1",
		"/uploadsx/a":                     "/uploadsx/a",
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

// TestChatPageUploads: with the page deployed, the distribution reaches the
// attachments bucket's regional REST endpoint (the host the functions'
// presigned URLs name and sign) under /uploads/*, through the function that
// removes the prefix and without caching, and every function tells the
// page that path (CHAT_PAGE_UPLOADS_PATH); without the page, none does.
func TestChatPageUploads(t *testing.T) {
	d := load(t, map[string]any{"ChatPage": "cognito", "CognitoDomainPrefix": "turnstream-chat"})
	cfg, _ := d.resourceProperties("ChatPageDistribution")["DistributionConfig"].(map[string]any)
	var origin map[string]any
	for _, o := range cfg["Origins"].([]any) {
		if m := o.(map[string]any); m["Id"] == "uploads" {
			origin = m
		}
	}
	if origin == nil || fmt.Sprint(origin["DomainName"]) != "GetAtt(AttachmentsBucket.RegionalDomainName)" {
		t.Fatalf("uploads origin %v, want the bucket's RegionalDomainName", origin)
	}
	var behaviour map[string]any
	for _, b := range cfg["CacheBehaviors"].([]any) {
		if m := b.(map[string]any); m["PathPattern"] == "/uploads/*" {
			behaviour = m
		}
	}
	if behaviour == nil || behaviour["TargetOriginId"] != "uploads" || behaviour["CachePolicyId"] != "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" ||
		!strings.Contains(fmt.Sprint(behaviour["AllowedMethods"]), "POST") || !strings.Contains(fmt.Sprint(behaviour["FunctionAssociations"]), "ChatPagePaths") {
		t.Errorf("/uploads/* behaviour %v", behaviour)
	}
	for _, fn := range []string{"TurnFunction", "HistoryFunction", "ArtifactsFunction"} {
		if got := d.environment(fn)["CHAT_PAGE_UPLOADS_PATH"]; got != "/uploads/" {
			t.Errorf("%s: CHAT_PAGE_UPLOADS_PATH %q with the page", fn, got)
		}
	}
	off := load(t, nil)
	if got := off.environment("HistoryFunction")["CHAT_PAGE_UPLOADS_PATH"]; got != "" {
		t.Errorf("CHAT_PAGE_UPLOADS_PATH %q without the page", got)
	}
}
