// Package lambdabin gives the smoke test (internal/smoketest), the
// runtime path test (internal/runtimetest) and cmd/turnbench the Lambda
// bootstraps, and the runtime interface emulator they run them under,
// built once.
//
// Bootstraps returns the bootstraps of the named functions: from the
// directory $TURNSTREAM_BOOTSTRAPS names, which `make test` fills before
// the tests start (so no test spends its time compiling), or else built
// by one go command into a directory of the caller. Those test builds use
// the host's GOOS and GOARCH, -tags lambda.norpc and, in a race-enabled
// binary, -race: every package they compile is then already in the build
// cache from the tests themselves. Build with Release gives the
// Makefile's release binaries instead (CGO_ENABLED=0, -trimpath,
// -ldflags "-s -w", any GOOS/GOARCH), for their sizes.
//
// InstallRIE installs the pinned emulator once per machine.
package lambdabin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// DirEnv names a directory of prebuilt test bootstraps, one file per
// function name (`make test` builds them into bin/test-bootstraps).
const DirEnv = "TURNSTREAM_BOOTSTRAPS"

// Packages are the bootstraps by name: the three functions and
// turnbench's minimal baseline.
var Packages = map[string]string{
	"turn":      "./functions/turn",
	"history":   "./functions/history",
	"artifacts": "./functions/artifacts",
	"minimal":   "./cmd/turnbench/internal/minimal",
}

// Options say how Build builds.
type Options struct {
	// Release builds as `make build` does (CGO_ENABLED=0, -trimpath,
	// -ldflags "-s -w") for GOOS/GOARCH; otherwise the test build for the
	// host (-race when this binary is race-enabled).
	Release      bool
	GOOS, GOARCH string // Release only; empty means the host's
	// ModFile, when set, builds with that go.mod instead of the module's
	// (go build -modfile, -mod=mod: the sums it needs are added to the
	// .sum file beside it).
	ModFile string
	// Tags are build tags beside lambda.norpc (tools.mcp,
	// provider.openai).
	Tags []string
}

// Bootstraps returns the paths of the named bootstraps (keys of
// Packages): those in $TURNSTREAM_BOOTSTRAPS when it is set (an error
// names any missing there), else the test build of them into dir. root
// is the module root.
func Bootstraps(ctx context.Context, root, dir string, names ...string) (map[string]string, error) {
	pre := os.Getenv(DirEnv)
	if pre == "" {
		return Build(ctx, root, dir, Options{}, names...)
	}
	paths := map[string]string{}
	for _, n := range names {
		p := filepath.Join(pre, n+exeSuffix(runtime.GOOS))
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s=%s: no bootstrap %s (make test-bootstraps builds them): %w", DirEnv, pre, n, err)
		}
		paths[n] = p
	}
	return paths, nil
}

// Build builds the named bootstraps into dir/<name> with one go command
// (so they share its parallelism) and returns their paths. root is the
// module root.
func Build(ctx context.Context, root, dir string, o Options, names ...string) (map[string]string, error) {
	args := []string{"build", "-tags", strings.Join(append([]string{"lambda.norpc"}, o.Tags...), ","), "-o", dir + string(filepath.Separator)}
	env := os.Environ()
	goos := runtime.GOOS
	if o.Release {
		args = append(args, "-trimpath", "-ldflags", "-s -w")
		if o.GOOS != "" {
			goos = o.GOOS
		}
		goarch := o.GOARCH
		if goarch == "" {
			goarch = runtime.GOARCH
		}
		env = append(env, "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	} else if raceEnabled {
		args = append(args, "-race")
	}
	if o.ModFile != "" {
		args = append(args, "-modfile", o.ModFile, "-mod=mod")
	}
	paths := map[string]string{}
	for _, n := range names {
		pkg, ok := Packages[n]
		if !ok {
			return nil, fmt.Errorf("lambdabin: no bootstrap named %q", n)
		}
		if !slices.Contains(args, pkg) {
			args = append(args, pkg)
		}
		paths[n] = filepath.Join(dir, filepath.Base(pkg)+exeSuffix(goos))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, GoTool(), args...)
	cmd.Dir = root
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %v: %w: %s", names, err, bytes.TrimSpace(out))
	}
	return paths, nil
}

func exeSuffix(goos string) string {
	if goos == "windows" {
		return ".exe"
	}
	return ""
}

// GoTool returns the go command: $GO (the Makefile's) when set, else
// $GOROOT/bin/go when GOROOT is set (as the go command sets it for the
// tests it runs), else "go" from PATH.
func GoTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// RIEModule and RIEVersion pin the runtime interface emulator (the
// Makefile's RIE_VERSION says the same).
const (
	RIEModule  = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	RIEVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// RIEDirEnv names a directory holding (or to receive) the emulator; the
// default is <user cache dir>/turnstream/aws-lambda-rie-<version>, where
// `make rie` installs it.
const RIEDirEnv = "TURNSTREAM_RIE_DIR"

// RIEPath is where InstallRIE installs the emulator (and `make rie`).
func RIEPath() (string, error) {
	dir := os.Getenv(RIEDirEnv)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "turnstream", "aws-lambda-rie-"+RIEVersion)
	}
	return filepath.Join(dir, "aws-lambda-rie"+exeSuffix(runtime.GOOS)), nil
}

// InstallRIE returns the emulator binary (RIEPath), installing it with
// `go install` first when absent. The install goes to a temporary
// directory renamed into place, so concurrent runs never see a partial
// binary.
func InstallRIE(ctx context.Context) (string, error) {
	bin, err := RIEPath()
	if err != nil {
		return "", err
	}
	if fileExists(bin) {
		return bin, nil
	}
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".rie-install-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.CommandContext(ctx, GoTool(), "install", RIEModule+"@"+RIEVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=")
	cmd.Dir = tmp // outside the module: install the pinned version, not go.mod's
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w: %s", RIEModule, RIEVersion, err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if !fileExists(bin) { // not installed concurrently by another run
			return "", err
		}
	}
	return bin, nil
}
