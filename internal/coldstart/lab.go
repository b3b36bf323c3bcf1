package coldstart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/lambdabin"
)

// ErrSkipped marks figures that were not measured (the reason follows).
var ErrSkipped = errors.New("not measured")

// Settings are a cold-start run's sizes.
type Settings struct {
	Runs    int // emulator runs of each bootstrap
	Invokes int // invocations driven per run after the first
	// Functions are the functions built and run under the emulator
	// (beside the minimal baseline).
	Functions []string
	// ReleaseBuilds builds the bootstraps with the release flags (for
	// their sizes; also what runs under the emulator); otherwise the run
	// uses the test build (lambdabin.Bootstraps).
	ReleaseBuilds bool
	// Arm64Sizes also builds the linux/arm64 release bootstraps for their
	// sizes (the native build is what runs under the emulator).
	Arm64Sizes bool
	// Upstream also runs the turn bootstrap built against upstream
	// github.com/santhosh-tekuri/jsonschema/v6 (go.mod without its replace
	// of third_party/jsonschema), filed as UpstreamTurn: what the fork
	// saves (third_party/jsonschema/PATCHES.md).
	Upstream bool
	// MCP also runs the turn bootstrap built with the MCP client
	// (-tags tools.mcp, filed as MCPTurn): what linking the MCP SDK costs
	// a cold start (docs/mcp.md).
	MCP bool
	// Telemetry also runs the turn bootstrap with TELEMETRY_METRICS=off
	// (TelemetryOffTurn, the baseline) and with an OTLP endpoint set
	// (TracingTurn): what EMF metrics, on by default on Lambda, and
	// tracing cost a cold start (docs/operations.md).
	Telemetry bool
}

// Config says what a run measures against: the module root, the
// emulator, and the DynamoDB table the functions serve.
type Config struct {
	Root     string // module root
	RIE      string // the aws-lambda-rie binary
	Endpoint string // DYNAMODB_ENDPOINT of the functions
	Table    string
	// SessionID is the session the functions' requests use.
	SessionID string
}

// Bootstrap names beside Baseline and the functions in Report.Runs.
const (
	// HostEnvTurn is the turn bootstrap run under turnbench's whole
	// environment rather than a Lambda-like one.
	HostEnvTurn = "turn (turnbench's environment)"
	// UpstreamTurn is the turn bootstrap built against upstream
	// jsonschema (Settings.Upstream).
	UpstreamTurn = "turn (upstream jsonschema)"
	// MCPTurn is the turn bootstrap built with the MCP client
	// (Settings.MCP).
	MCPTurn = "turn (MCP client built in)"
	// TelemetryOffTurn and TracingTurn are the turn bootstrap with
	// metrics off, and with EMF metrics and tracing on (Settings.Telemetry;
	// the plain "turn" run has EMF on, the Lambda default).
	TelemetryOffTurn = "turn (TELEMETRY_METRICS=off)"
	TracingTurn      = "turn (EMF and tracing on)"
)

// Report is what a run measured.
type Report struct {
	// Sizes are the bootstraps' sizes by GOARCH, then name.
	Sizes map[string]map[string]int64
	// Runs are the emulator runs by bootstrap name.
	Runs map[string]*Result
	// Err is why the runs are missing: wrapping ErrSkipped when they
	// could not run here (no emulator, not Linux), else a failure.
	Err error
	// NativeArch is the GOARCH the runs used.
	NativeArch string
}

// Measure builds the bootstraps (linux/arm64 for the release sizes, the
// native architecture for the emulator runs) and measures them under
// cfg.RIE. A missing emulator skips the runs, not the sizes.
func Measure(ctx context.Context, cfg Config, set Settings) *Report {
	rep := &Report{NativeArch: runtime.GOARCH, Sizes: map[string]map[string]int64{}}
	dir, err := os.MkdirTemp("", "turnbench-bin-")
	if err != nil {
		rep.Err = err
		return rep
	}
	defer func() { _ = os.RemoveAll(dir) }()
	native, err := build(ctx, cfg.Root, dir, set, rep.Sizes)
	if err != nil {
		rep.Err = err
		return rep
	}
	if runtime.GOOS != "linux" {
		rep.Err = fmt.Errorf("%w: the emulator runs need linux", ErrSkipped)
		return rep
	}
	if _, err := os.Stat(cfg.RIE); err != nil {
		rep.Err = fmt.Errorf("%w: %s not found (make rie)", ErrSkipped, cfg.RIE)
		return rep
	}
	self, err := os.Executable()
	if err != nil {
		rep.Err = err
		return rep
	}
	boots := []bootstrap{{name: Baseline, fn: Baseline, bin: native[Baseline]}}
	for _, fn := range set.Functions {
		boots = append(boots, bootstrap{name: fn, fn: fn, bin: native[fn]})
	}
	if bin := native[UpstreamTurn]; bin != "" {
		boots = append(boots, bootstrap{name: UpstreamTurn, fn: "turn", bin: bin})
	}
	if bin := native[MCPTurn]; bin != "" {
		boots = append(boots, bootstrap{name: MCPTurn, fn: "turn", bin: bin})
	}
	if bin := native["turn"]; bin != "" {
		boots = append(boots, bootstrap{name: HostEnvTurn, fn: "turn", bin: bin, hostEnv: true})
		if set.Telemetry {
			// The collector's address refuses connections: each
			// invocation's flush fails at once, as the export would fail
			// against no collector (telemetry never fails a request).
			boots = append(boots,
				bootstrap{name: TelemetryOffTurn, fn: "turn", bin: bin, env: []string{"TELEMETRY_METRICS=off"}},
				bootstrap{name: TracingTurn, fn: "turn", bin: bin, env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9"}})
		}
	}
	env := FunctionEnv(cfg.Endpoint, cfg.Table, 0)
	rep.Runs, rep.Err = measureColdStarts(ctx, cfg.RIE, self, boots, env, cfg.SessionID, set.Runs, set.Invokes)
	return rep
}

// FunctionEnv is the functions' configuration under the emulator: the
// DynamoDB table at endpoint, IAM auth (the function URL event's caller;
// the artifacts writer trusted), the echo model with echoDelay between
// deltas of its default chunk, and a fixed cursor secret.
func FunctionEnv(endpoint, table string, echoDelay time.Duration) []string {
	return []string{
		"DYNAMODB_ENDPOINT=" + endpoint, "TABLE_NAME=" + table, "AWS_REGION=us-east-1",
		"AUTH_MODE=iam", "ARTIFACTS_TRUSTED_SUBJECT=" + iamHost, "MODEL_PROVIDER=echo", "ECHO_DELAY=" + echoDelay.String(),
		"CURSOR_SECRET=turnbench-cursor-secret-0123456789", "LOG_LEVEL=error",
	}
}

// build builds what set asks for into dir, files their sizes in sizes
// and returns the native builds by name.
func build(ctx context.Context, root, dir string, set Settings, sizes map[string]map[string]int64) (map[string]string, error) {
	names := append([]string{Baseline}, set.Functions...)
	var native map[string]string
	var err error
	if !set.ReleaseBuilds {
		// The test build the smoke test shares (prebuilt by make test).
		if native, err = lambdabin.Bootstraps(ctx, root, dir, names...); err != nil {
			return nil, err
		}
		if sizes[runtime.GOARCH], err = sizesOf(native); err != nil {
			return nil, err
		}
	}
	archs := []string{runtime.GOARCH}
	if set.Arm64Sizes && runtime.GOARCH != "arm64" {
		archs = append(archs, "arm64")
	}
	for _, arch := range archs {
		if !set.ReleaseBuilds {
			continue
		}
		paths, err := lambdabin.Build(ctx, root, filepath.Join(dir, arch), lambdabin.Options{Release: true, GOOS: "linux", GOARCH: arch}, names...)
		if err != nil {
			return nil, err
		}
		if sizes[arch], err = sizesOf(paths); err != nil {
			return nil, err
		}
		if arch == runtime.GOARCH {
			native = paths
		}
	}
	if set.Upstream {
		mod, err := upstreamModFile(root, dir)
		if err != nil {
			return nil, err
		}
		paths, err := lambdabin.Build(ctx, root, filepath.Join(dir, "upstream"), lambdabin.Options{Release: set.ReleaseBuilds, GOOS: "linux", ModFile: mod}, "turn")
		if err != nil {
			return nil, err
		}
		native[UpstreamTurn] = paths["turn"]
		st, err := os.Stat(paths["turn"])
		if err != nil {
			return nil, err
		}
		sizes[runtime.GOARCH][UpstreamTurn] = st.Size()
	}
	if set.MCP {
		for _, arch := range archs {
			if arch != runtime.GOARCH && !set.ReleaseBuilds {
				continue
			}
			paths, err := lambdabin.Build(ctx, root, filepath.Join(dir, "mcp-"+arch), lambdabin.Options{Release: set.ReleaseBuilds, GOOS: "linux", GOARCH: arch, Tags: []string{"tools.mcp"}}, "turn")
			if err != nil {
				return nil, err
			}
			st, err := os.Stat(paths["turn"])
			if err != nil {
				return nil, err
			}
			if sizes[arch] == nil {
				sizes[arch] = map[string]int64{}
			}
			sizes[arch][MCPTurn] = st.Size()
			if arch == runtime.GOARCH {
				native[MCPTurn] = paths["turn"]
			}
		}
	}
	return native, nil
}

// jsonschemaReplace starts go.mod's replace of upstream jsonschema by the
// fork in third_party/jsonschema.
const jsonschemaReplace = "replace github.com/santhosh-tekuri/jsonschema/v6 =>"

// upstreamModFile writes into dir a go.mod (upstream.mod, with its
// upstream.sum) that is root's without the replace of jsonschema, for
// `go build -modfile`, and returns its path.
func upstreamModFile(root, dir string) (string, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	var kept []string
	found := false
	for line := range strings.Lines(string(mod)) {
		if strings.HasPrefix(line, jsonschemaReplace) {
			found = true
			continue
		}
		kept = append(kept, line)
	}
	if !found {
		return "", errors.New("go.mod has no replace of jsonschema: there is no fork to compare")
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "upstream.mod")
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o600); err != nil {
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "upstream.sum"), sum, 0o600)
}

// sizesOf returns the size of each file of paths, by name.
func sizesOf(paths map[string]string) (map[string]int64, error) {
	sizes := map[string]int64{}
	for name, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		sizes[name] = st.Size()
	}
	return sizes, nil
}
