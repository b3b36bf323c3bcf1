package definition_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/definition"
)

// mcpFile is a definitions file whose one definition has the MCP servers
// servers (a JSON array's members).
func mcpFile(servers string) string {
	return `[{"id": "d", "revision": 1, "provider": "echo", "mcpServers": [` + servers + `]}]`
}

func loadMCP(servers string) ([]definition.MCPServer, error) {
	defs, err := definition.Parse([]byte(mcpFile(servers)))
	if err != nil {
		return nil, err
	}
	r, err := definition.New(defs, "d", known())
	if err != nil {
		return nil, err
	}
	d, err := r.Resolve("d")
	return d.MCPServers, err
}

func TestMCPServers(t *testing.T) {
	got, err := loadMCP(`
	  {"name": "docs", "url": "https://mcp.example.com/mcp"},
	  {"name": "local-2", "url": "http://127.0.0.1:8931/mcp", "timeoutMs": 2500, "requireApproval": "never",
	   "headers": {"x-api-key": {"secretId": "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-key", "prefix": "Key "}, "X-Tenant": "acme"}},
	  {"name": "crm", "url": "https://[::1]/mcp", "allowedTools": ["find_customer", "open.ticket"], "requireApproval": ["open.ticket"]},
	  {"name": "lh", "url": "http://localhost:3000/", "requireApproval": null}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []definition.MCPServer{
		{Name: "docs", URL: "https://mcp.example.com/mcp", Approval: definition.MCPApproval{Always: true}, Timeout: definition.DefaultMCPTimeout},
		{Name: "local-2", URL: "http://127.0.0.1:8931/mcp", Timeout: 2500 * time.Millisecond, Headers: []definition.MCPHeader{
			{Name: "X-Tenant", Value: "acme"},
			{Name: "X-Api-Key", SecretID: "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-key", Prefix: "Key "},
		}},
		{Name: "crm", URL: "https://[::1]/mcp", AllowedTools: []string{"find_customer", "open.ticket"},
			Approval: definition.MCPApproval{Tools: []string{"open.ticket"}}, Timeout: definition.DefaultMCPTimeout},
		{Name: "lh", URL: "http://localhost:3000/", Approval: definition.MCPApproval{Always: true}, Timeout: definition.DefaultMCPTimeout},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("servers\n got %+v\nwant %+v", got, want)
	}
	for name, tc := range map[string]struct {
		a    definition.MCPApproval
		tool string
		want bool
	}{
		"always":        {definition.MCPApproval{Always: true}, "x", true},
		"never":         {definition.MCPApproval{}, "x", false},
		"listed":        {definition.MCPApproval{Tools: []string{"x"}}, "x", true},
		"not listed":    {definition.MCPApproval{Tools: []string{"x"}}, "y", false},
		"empty list":    {definition.MCPApproval{Tools: []string{}}, "x", false},
		"case matters":  {definition.MCPApproval{Tools: []string{"x"}}, "X", false},
		"always wins":   {definition.MCPApproval{Always: true, Tools: []string{"y"}}, "x", true},
		"prefix is not": {definition.MCPApproval{Tools: []string{"open"}}, "open.ticket", false},
	} {
		if got := tc.a.Requires(tc.tool); got != tc.want {
			t.Errorf("%s: Requires(%q) = %v, want %v", name, tc.tool, got, tc.want)
		}
	}
}

// TestMCPServersInvalid: every kind of bad server is refused at load with
// an error naming the member, never quoting a value (a header's value may
// be a credential).
func TestMCPServersInvalid(t *testing.T) {
	const secret = "sk-live-do-not-echo"
	long := strings.Repeat("a", definition.MaxMCPServerNameLen+1)
	many := func(n int, item string) string {
		return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
	}
	for name, tc := range map[string]struct{ servers, member string }{
		"no name":              {`{"url": "https://x.example/mcp"}`, "mcpServers[0].name"},
		"no url":               {`{"name": "a"}`, "mcpServers[0].url"},
		"unknown member":       {`{"name": "a", "url": "https://x.example/mcp", "command": "sh"}`, "/0/mcpServers/0/command"},
		"name with underscore": {`{"name": "a_b", "url": "https://x.example/mcp"}`, "mcpServers[0].name"},
		"name too long":        {`{"name": "` + long + `", "url": "https://x.example/mcp"}`, "mcpServers[0].name"},
		"name starts with -":   {`{"name": "-a", "url": "https://x.example/mcp"}`, "mcpServers[0].name"},
		"repeated name":        {`{"name": "a", "url": "https://x.example/mcp"}, {"name": "A", "url": "https://y.example/mcp"}`, "mcpServers[1].name"},
		"too many servers":     {many(definition.MaxMCPServers+1, `{"name": "a", "url": "https://x.example/mcp"}`), "mcpServers"},
		"plain http":           {`{"name": "a", "url": "http://mcp.example.com/mcp"}`, "mcpServers[0].url"},
		"http to a LAN host":   {`{"name": "a", "url": "http://10.0.0.2/mcp"}`, "mcpServers[0].url"},
		"not a URL":            {`{"name": "a", "url": "mcp.example.com"}`, "mcpServers[0].url"},
		"another scheme":       {`{"name": "a", "url": "ws://localhost/mcp"}`, "mcpServers[0].url"},
		"credentials in URL":   {`{"name": "a", "url": "https://u:` + secret + `@x.example/mcp"}`, "mcpServers[0].url"},
		"fragment":             {`{"name": "a", "url": "https://x.example/mcp#` + secret + `"}`, "mcpServers[0].url"},
		"timeout 0":            {`{"name": "a", "url": "https://x.example/mcp", "timeoutMs": 0}`, "mcpServers[0].timeoutMs"},
		"timeout too long":     {`{"name": "a", "url": "https://x.example/mcp", "timeoutMs": 900001}`, "mcpServers[0].timeoutMs"},
		"timeout not integral": {`{"name": "a", "url": "https://x.example/mcp", "timeoutMs": 1.5}`, "/0/mcpServers/0/timeoutMs"},
		"approval word":        {`{"name": "a", "url": "https://x.example/mcp", "requireApproval": "sometimes"}`, "mcpServers[0].requireApproval"},
		"approval type":        {`{"name": "a", "url": "https://x.example/mcp", "requireApproval": true}`, "mcpServers[0].requireApproval"},
		"approval not allowed": {`{"name": "a", "url": "https://x.example/mcp", "allowedTools": ["x"], "requireApproval": ["y"]}`, "mcpServers[0].requireApproval"},
		"approval bad name":    {`{"name": "a", "url": "https://x.example/mcp", "requireApproval": ["a b"]}`, "mcpServers[0].requireApproval"},
		"approval repeated":    {`{"name": "a", "url": "https://x.example/mcp", "requireApproval": ["x", "x"]}`, "mcpServers[0].requireApproval"},
		"allowed empty":        {`{"name": "a", "url": "https://x.example/mcp", "allowedTools": []}`, "mcpServers[0].allowedTools"},
		"allowed bad name":     {`{"name": "a", "url": "https://x.example/mcp", "allowedTools": ["` + strings.Repeat("t", 129) + `"]}`, "mcpServers[0].allowedTools"},
		"allowed repeated":     {`{"name": "a", "url": "https://x.example/mcp", "allowedTools": ["x", "x"]}`, "mcpServers[0].allowedTools"},
		"header not a token":   {`{"name": "a", "url": "https://x.example/mcp", "headers": {"Bad Header": "` + secret + `"}}`, "mcpServers[0].headers"},
		"reserved header":      {`{"name": "a", "url": "https://x.example/mcp", "headers": {"mcp-session-id": "` + secret + `"}}`, "mcpServers[0].headers"},
		"header twice":         {`{"name": "a", "url": "https://x.example/mcp", "headers": {"X-Key": "` + secret + `", "x-key": "` + secret + `"}}`, "mcpServers[0].headers"},
		"header newline":       {`{"name": "a", "url": "https://x.example/mcp", "headers": {"X-Key": "` + secret + `\r\nX-Other: 1"}}`, "mcpServers[0].headers"},
		"header number":        {`{"name": "a", "url": "https://x.example/mcp", "headers": {"X-Key": 12}}`, "mcpServers[0].headers"},
		"header secret member": {`{"name": "a", "url": "https://x.example/mcp", "headers": {"X-Key": {"secretId": "s", "value": "` + secret + `"}}}`, "mcpServers[0].headers"},
		"header no secretId":   {`{"name": "a", "url": "https://x.example/mcp", "headers": {"X-Key": {"prefix": "Bearer "}}}`, "mcpServers[0].headers"},
		"header value long":    {`{"name": "a", "url": "https://x.example/mcp", "headers": {"X-Key": "` + strings.Repeat("v", definition.MaxMCPHeaderValueBytes+1) + `"}}`, "mcpServers[0].headers"},
		"too many headers":     {`{"name": "a", "url": "https://x.example/mcp", "headers": {` + headers(definition.MaxMCPHeaders+1) + `}}`, "mcpServers[0].headers"},
		"servers not a list":   {`{"name": "a", "url": "https://x.example/mcp"}], "x": [`, "/0/x"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadMCP(tc.servers)
			if !errors.Is(err, definition.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.member) {
				t.Errorf("error %q does not name %s", err, tc.member)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "vvvv") {
				t.Errorf("error %q quotes a value", err)
			}
		})
	}
}

func headers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"X-H` + strings.Repeat("h", i) + `": "v"`)
	}
	return b.String()
}
