//go:build !linux

package main

import (
	"syscall"
	"time"
)

// sysProcAttr: without Pdeathsig, redis-server is stopped by fairbench's own
// cleanup only.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// processCPU: not read here; the client's CPU is reported as n/a.
func processCPU() time.Duration { return -1 }
