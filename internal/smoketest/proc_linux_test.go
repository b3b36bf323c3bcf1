package smoketest_test

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the emulator (and the bootstrap it starts) in its own
// process group, killed by the kernel if the test binary dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the emulator's process group, bootstrap included.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // already gone is fine
}
