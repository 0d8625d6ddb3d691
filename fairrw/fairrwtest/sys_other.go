//go:build !linux

package fairrwtest

import "syscall"

// sysProcAttr: only Linux can have the kernel kill redis-server with the test
// binary; elsewhere Close (or the test's cleanup) must run.
func sysProcAttr() *syscall.SysProcAttr { return nil }
