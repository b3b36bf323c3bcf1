//go:build unix && !linux

package fate

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts a dev server in its own process group. Without
// Linux's parent-death signal, Run's own stop is what ends it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
