package host

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill a plugin the moment faucet dies, even by
// SIGKILL, so no plugin outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
