//go:build !linux

package motoserver

import "os/exec"

// setProcAttr leaves the process attributes alone off Linux.
func setProcAttr(*exec.Cmd) {}
