package attachbench

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/dynamobench"
)

func TestPeakRows(t *testing.T) {
	if rows := (*Peak)(nil).rows(""); rows != nil {
		t.Errorf("no peak, no reason: %q, want no row", rows)
	}
	rows := (*Peak)(nil).rows("no moto_server")
	if len(rows) != 1 || !strings.Contains(rows[0][0], "not measured (no moto_server)") {
		t.Errorf("skipped: %q", rows)
	}
	p := &Peak{Processes: 3, Plain: []int64{20480, 19456, 30000}, Image: []int64{22528, 40000, 21504}}
	rows = p.rows("")
	want := [4]string{"", "22.0 MiB", "20.0 MiB", "1.10×"}
	if len(rows) != 1 || rows[0][1] != want[1] || rows[0][2] != want[2] || rows[0][3] != want[3] {
		t.Errorf("rows %q, want medians %q", rows, want[1:])
	}
	res := &Result{Peak: p, Plain: Turns{Accounts: []*dynamobench.Account{{}}}, Image: Turns{Accounts: []*dynamobench.Account{{}}}}
	if all := res.Rows(); all[len(all)-1] != rows[0] {
		t.Errorf("Result.Rows does not end with the peak: %q", all[len(all)-1])
	}
}
