package main

import "syscall"

// sysProcAttr makes the kernel kill redis-server when fairbench dies
// without stopping it (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
