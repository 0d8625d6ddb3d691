//go:build unix && !linux

package holder

import "syscall"

// sysProcAttr: only Linux can tie the child's life to the parent's; the
// test's cleanup kills it elsewhere.
func sysProcAttr() *syscall.SysProcAttr { return nil }
