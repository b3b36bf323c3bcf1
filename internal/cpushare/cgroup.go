package cpushare

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Lambda gives a function CPU in proportion to its memory: 1,769 MB is
// one vCPU (docs/benchmarks.md, "Memory size and CPU share").
const (
	// OneVCPUMB is the memory size that gets one full vCPU.
	OneVCPUMB = 1769
	// Period is the CFS period of the groups, in microseconds.
	Period = 100_000
)

// Quota is the CFS quota (microseconds of CPU per Period) that emulates
// a function of memoryMB: Period × memoryMB / OneVCPUMB, rounded to the
// nearest microsecond (128 MB: 7,236, 7.2% of one CPU).
func Quota(memoryMB int) int64 {
	return int64(math.Round(float64(Period) * float64(memoryMB) / OneVCPUMB))
}

// Share is the fraction of one CPU that memoryMB gets (Quota / Period).
func Share(memoryMB int) float64 { return float64(Quota(memoryMB)) / Period }

// CgroupRoot is where the groups are made: the cgroup v1 cpu controller.
const CgroupRoot = "/sys/fs/cgroup/cpu"

// Available says why groups cannot be made under root (cgroup v1's cpu
// controller), wrapping ErrSkipped, or nil when they can: Linux, root,
// and a cpu.cfs_quota_us file there.
func Available(root string) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: cgroups need Linux", ErrSkipped)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: making a cgroup needs root", ErrSkipped)
	}
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		return fmt.Errorf("%w: no cgroup v1 cpu controller at %s (%v)", ErrSkipped, root, err)
	}
	return nil
}

// cgroup is one cpu group made under a root (newCgroup).
type cgroup struct{ dir string }

// newCgroup makes root/name with the quota of memoryMB. A group left by
// an interrupted run of the same name is reused.
func newCgroup(root, name string, memoryMB int) (*cgroup, error) {
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: make cgroup %s: %v", ErrSkipped, dir, err)
	}
	g := &cgroup{dir: dir}
	for _, f := range [][2]string{
		{"cpu.cfs_period_us", strconv.Itoa(Period)},
		{"cpu.cfs_quota_us", strconv.FormatInt(Quota(memoryMB), 10)},
	} {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
			_ = g.remove()
			return nil, fmt.Errorf("%w: set %s of %s: %v", ErrSkipped, f[0], dir, err)
		}
	}
	return g, nil
}

// procs is the group's cgroup.procs file: a pid written there moves into
// the group, and its children inherit it.
func (g *cgroup) procs() string { return filepath.Join(g.dir, "cgroup.procs") }

// remove removes the group, which must be empty: it retries for a second
// while the killed bootstrap is reaped.
func (g *cgroup) remove() error {
	var err error
	for range 20 {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", g.dir, err)
}
