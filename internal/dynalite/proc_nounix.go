//go:build !unix

package dynalite

import "os/exec"

// setProcAttr does nothing where there are no process groups: Main is
// what stops dynalite.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the dynalite process itself.
func killGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill() // already gone is fine
}
