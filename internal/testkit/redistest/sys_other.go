//go:build !linux

package redistest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

// reservePort holds nothing here: a stopped server's port may be taken
// before it starts again.
func reservePort(port int) (release func(), err error) { return func() {}, nil }
