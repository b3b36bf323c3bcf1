package coldstart

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts a child (dynalite, the emulator) in its own process
// group and asks the kernel to kill it when turnbench dies, so that no
// child outlives an interrupted run.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills a child's process group (the emulator's bootstrap, the
// node process behind dynalite's script).
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // already gone is fine
}

// execProcess replaces this process with bin (the self-exec wrapper of
// the cold-start section).
func execProcess(bin string, env []string) error {
	return syscall.Exec(bin, []string{bin}, env)
}
