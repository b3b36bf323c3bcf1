//go:build unix

package telemetrybench

import (
	"syscall"
	"time"
)

// processCPU is this process's user and system CPU time (getrusage, all
// threads; the kernel sums the precise run time), or -1 when unreadable.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
