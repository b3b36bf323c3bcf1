//go:build !unix

package coldstart

import (
	"errors"
	"os/exec"
)

// setProcAttr does nothing where there are no process groups.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the child itself (there is no process group to kill).
func killGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill() // already gone is fine
}

// execProcess is unsupported: the cold-start section runs on Linux only.
func execProcess(string, []string) error {
	return errors.New("exec needs a unix system")
}
