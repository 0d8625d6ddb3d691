package fairrw

import (
	"fmt"

	"github.com/fairrw/rwlock/internal/slot"
)

// MaxNameLength is the longest lock name accepted, in bytes. Redis allows
// longer keys, but a lock name that long is a bug, and every key and message
// of the lock repeats it.
const MaxNameLength = 4096

// validateName checks a lock name before any command is built: it must be
// non-empty, at most MaxNameLength bytes, and every key derived from it must
// hash to the name's own cluster slot (the rueidis cluster client panics on
// a cross-slot command, so this must never reach it).
func validateName(name string, derived ...string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidName)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidName, len(name), MaxNameLength)
	}
	want := slot.Of(name)
	for _, key := range derived {
		if slot.Of(key) != want {
			return fmt.Errorf("%w: %q: its keys would not share one cluster slot (use a balanced, non-empty {hash tag})", ErrInvalidName, name)
		}
	}
	return nil
}

func slotOf(key string) uint16 { return slot.Of(key) }
