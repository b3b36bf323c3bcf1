//go:build unix && !linux

package dynalite

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts dynalite in its own process group. Without Linux's
// parent-death signal, Main is what stops it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills dynalite's process group.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // already gone is fine
}
