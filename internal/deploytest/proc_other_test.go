//go:build !linux

package deploytest_test

import "os/exec"

// setProcAttr leaves the process attributes alone off Linux.
func setProcAttr(*exec.Cmd) {}
