package coldstart

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestParseInitTrace(t *testing.T) {
	trace := strings.Join([]string{
		"init internal/bytealg @0.009 ms, 0 ms clock, 0 bytes, 0 allocs",
		"init runtime @0.030 ms, 0.10 ms clock, 0 bytes, 0 allocs",
		"init github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas @9.0 ms, 0.74 ms clock, 586696 bytes, 3151 allocs",
		"init github.com/santhosh-tekuri/jsonschema/v6 @13 ms, 5.6 ms clock, 1701952 bytes, 21294 allocs",
		"init github.com/aws/smithy-go/document @14 ms, 0.010 ms clock, 16 bytes, 1 allocs",
		"some other line the bootstrap wrote",
		"init github.com/turnstream/turnstream/pkg/protocol @20 ms, 0.050 ms clock, 100 bytes, 2 allocs",
		"init example.com/x @21 ms, 0.2 ms clock, 10 bytes, 1 allocs",
	}, "\n") + "\n"
	s := parseInitTrace(trace)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	if want := ms(21.2); s.done != want {
		t.Errorf("done = %v, want %v (the last init's @ plus its clock)", s.done, want)
	}
	if want := ms(0.1 + 0.74 + 5.6 + 0.01 + 0.05 + 0.2); s.clock != want {
		t.Errorf("clock = %v, want %v", s.clock, want)
	}
	if want := int64(586696 + 1701952 + 16 + 100 + 10); s.allocs != want {
		t.Errorf("allocs = %d, want %d", s.allocs, want)
	}
	want := map[string]time.Duration{"Go standard library": ms(0.1), "aws-sdk-go-v2": ms(0.75), "jsonschema": ms(5.6), "turnstream": ms(0.05), "other": ms(0.2)}
	for g, d := range want {
		if s.byGroup[g] != d {
			t.Errorf("group %s = %v, want %v (all: %v)", g, s.byGroup[g], d, s.byGroup)
		}
	}
	if len(s.byGroup) != len(want) {
		t.Errorf("groups %v, want %v", s.byGroup, want)
	}
	a := accountOf([]*initSample{s, parseInitTrace("init runtime @0.030 ms, 0.30 ms clock, 0 bytes, 0 allocs\n"), s})
	if a.Runs != 3 || a.InitClock != s.clock || a.ByGroup["jsonschema"] != ms(5.6) || a.ByGroup["Go standard library"] != ms(0.1) {
		t.Errorf("accountOf = %+v; want the medians, a group missing from a run counted as 0", *a)
	}
}

// TestLambdaEnv checks that a bootstrap's environment carries none of
// turnbench's own and ends with the function's configuration.
func TestLambdaEnv(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "/nonexistent/turnbench-test.pem")
	t.Setenv("TURNBENCH_TEST_HOST_ONLY", "1")
	fn := []string{"TABLE_NAME=t1", "AUTH_MODE=iam"}
	env := lambdaEnv(fn)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "AWS_CA_BUNDLE" || k == "TURNBENCH_TEST_HOST_ONLY" || k == "HOME" {
			t.Errorf("lambdaEnv passes %s on", kv)
		}
	}
	if !slices.Equal(env[len(env)-len(fn):], fn) {
		t.Errorf("lambdaEnv = %v; want the function's configuration last", env)
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "AWS_LAMBDA_FUNCTION_NAME=") }) {
		t.Errorf("lambdaEnv = %v; want Lambda's own variables", env)
	}
}

func TestGroupList(t *testing.T) {
	got := groupList(map[string]time.Duration{"a": time.Millisecond, "b": 3 * time.Millisecond})
	if want := fmt.Sprintf("b %.2f, a %.2f ms", 3.0, 1.0); got != want {
		t.Errorf("groupList = %q, want %q", got, want)
	}
}

func TestParseSchedStat(t *testing.T) {
	tests := map[string]struct {
		in        string
		run, wait time.Duration
		ok        bool
	}{
		"line":        {"469744089 8951505949 1015\n", 469744089, 8951505949, true},
		"short":       {"12", 0, 0, false},
		"not numbers": {"a b c", 0, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			run, wait, ok := parseSchedStat(tc.in)
			if run != tc.run || wait != tc.wait || ok != tc.ok {
				t.Errorf("parseSchedStat = %v, %v, %v; want %v, %v, %v", run, wait, ok, tc.run, tc.wait, tc.ok)
			}
		})
	}
	if _, _, ok := schedStat(os.Getpid()); !ok && fileExists("/proc/self/task") {
		t.Error("schedStat(self) unreadable with /proc present")
	}
}
