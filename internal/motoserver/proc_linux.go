package motoserver

import (
	"os/exec"
	"syscall"
)

// setProcAttr has the kernel kill moto's server if the test binary dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
