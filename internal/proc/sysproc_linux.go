package proc

import "syscall"

// sysProcAttr puts the program in its own process group, so that stopping
// it stops what it started, and has the kernel SIGKILL it if loadgen itself
// dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
