//go:build !linux

package main

import "syscall"

// sysProcAttr: without Pdeathsig, redis-server is stopped by fairbench's own
// cleanup only.
func sysProcAttr() *syscall.SysProcAttr { return nil }
