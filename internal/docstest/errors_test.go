package docstest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// errorRowRE is a row of the error table: code, HTTP status, retryable,
// message, and the when column (not checked).
var errorRowRE = regexp.MustCompile("^\\| `([A-Z_]+)` \\| (\\d+) \\| (yes|no) \\| ([^|]+?) \\| [^|]+ \\|$")

// TestErrorTable: docs/design.md#errors, the one table of error codes and
// HTTP statuses, lists every code httpedge.Diagnose can return, once,
// with the status, retryability and message pkg/protocol gives it.
func TestErrorTable(t *testing.T) {
	text, ok := readText(filepath.Join(repoRoot(t), "docs", "design.md"))
	if !ok {
		t.Fatal("docs/design.md is missing")
	}
	_, section, ok := strings.Cut(text, "\n## Errors\n")
	if !ok {
		t.Fatal("docs/design.md has no ## Errors section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		m := errorRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("%s is listed twice", m[1])
		}
		rows[m[1]] = strings.Join(m[2:5], " | ")
	}
	var missing []string
	for _, code := range httpedge.Codes() {
		d := protocol.NewDiagnostic(code)
		want := strings.Join([]string{strconv.Itoa(protocol.HTTPStatus(code)), map[bool]string{true: "yes", false: "no"}[d.Retryable], d.Message}, " | ")
		got, ok := rows[code]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("| `%s` | %s | ... |", code, want))
		case got != want:
			t.Errorf("%s: the table says %q, the code %q", code, got, want)
		}
		delete(rows, code)
	}
	for code := range rows {
		t.Errorf("%s is in the table, but httpedge.Diagnose never returns it", code)
	}
	if len(missing) > 0 {
		t.Errorf("the table lacks these rows:\n%s", strings.Join(missing, "\n"))
	}
}
