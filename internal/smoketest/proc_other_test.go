//go:build !linux

package smoketest_test

import "os/exec"

// setProcAttr leaves the process attributes alone off Linux.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the emulator; its bootstrap exits when the emulator's
// Runtime API goes away.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
