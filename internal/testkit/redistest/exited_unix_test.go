//go:build unix

package redistest

import (
	"errors"
	"syscall"
)

// exited reports whether no process with this pid exists any more (it was
// waited for, so it is not even a zombie).
func exited(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
