//go:build unix

package fate

import (
	"os/exec"
	"syscall"
)

// supported reports whether processes can be paused here.
const supported = true

// signalStop pauses the process (SIGSTOP).
func signalStop(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGSTOP) }

// signalCont continues a paused process (SIGCONT).
func signalCont(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGCONT) }

// killProcess kills the process (SIGKILL); already gone is fine.
func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Signal(syscall.SIGKILL) }
