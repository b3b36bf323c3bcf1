package fate

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts a dev server in its own process group and asks the
// kernel to kill it when the harness dies, so none outlives a run.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
