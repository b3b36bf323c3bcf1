//go:build unix

package dynalite

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has id pid (kill -0 answers
// ESRCH), with the error kill gave otherwise.
func processGone(pid int) (bool, error) {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH), err
}
