package main

import (
	"syscall"
	"time"
)

// sysProcAttr makes the kernel kill redis-server when fairbench dies
// without stopping it (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processCPU returns the user+system CPU time fairbench has used so far
// (getrusage RUSAGE_SELF: every thread of this process, not redis-server),
// or -1 if it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
