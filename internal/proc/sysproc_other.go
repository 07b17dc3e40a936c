//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts the program in its own process group, so that stopping
// it stops what it started. These systems have no parent-death signal: a
// loadgen killed with SIGKILL leaves the program running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
