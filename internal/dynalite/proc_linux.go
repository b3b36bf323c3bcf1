package dynalite

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts dynalite in its own process group and asks the kernel
// to kill it when the test binary dies, so no node process outlives the
// tests even without Main.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills dynalite's process group.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // already gone is fine
}
