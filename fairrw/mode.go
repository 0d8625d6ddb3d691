package fairrw

import "github.com/fairrw/rwlock/internal/wait"

// Mode is the kind of hold a Lease grants: what ForceUnlock frees and what
// Inspect reports of each holder (HolderInfo.Mode).
type Mode uint8

const (
	// Read is a shared hold: many owners may read together.
	Read Mode = iota + 1
	// Write is an exclusive hold: one owner, no readers but its own.
	Write
)

// String returns "read" or "write", as logs, spans and LockInfo's JSON name
// the mode.
func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	default:
		return "invalid"
	}
}

// waitMode is m as the wait registry names it.
func waitMode(m Mode) wait.Mode {
	if m == Read {
		return wait.Read
	}
	return wait.Write
}
