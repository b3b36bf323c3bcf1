package runtimetest_test

import (
	"os/exec"
	"syscall"
)

// setProcAttr has the kernel kill the runtime process if the test binary
// dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
