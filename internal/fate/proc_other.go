//go:build !unix

package fate

import "os/exec"

// supported reports whether processes can be paused here: SIGSTOP and
// SIGCONT need a unix system.
const supported = false

func setProcAttr(*exec.Cmd) {}

func signalStop(*exec.Cmd) error { return errUnsupported }

func signalCont(*exec.Cmd) error { return errUnsupported }

func killProcess(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
