//go:build unix && !linux

package coldstart

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts a child (dynalite, the emulator) in its own process
// group. Without Linux's parent-death signal, the deferred stops are what
// end the children.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills a child's process group.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // already gone is fine
}

// execProcess replaces this process with bin (the self-exec wrapper of
// the cold-start section).
func execProcess(bin string, env []string) error {
	return syscall.Exec(bin, []string{bin}, env)
}
