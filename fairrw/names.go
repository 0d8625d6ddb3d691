package fairrw

import (
	"fmt"
	"strings"

	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/slot"
)

// maxNameLength is the longest lock name accepted, in bytes (else
// ErrInvalidName): 4096.
const maxNameLength = hidden.MaxNameLength

// reservedPrefix starts every key fairrw adds beside a lock ("fairrw:<len>:{N}",
// "fairrw:<len>:{N}:fence", "fairrw_attempt:{N}:...": internal/wire). A lock named with it could
// be another lock's state: a Redisson lock "fairrw:{x}" would write into the
// fair state of lock "x" and free it on unlock.
const reservedPrefix = "fairrw"

// validateName checks a lock name before any command is built: it must be
// non-empty, at most maxNameLength bytes, not start with fairrw's own key
// prefixes, and every key derived from it must hash to the name's own
// cluster slot (the rueidis cluster client panics on a cross-slot command,
// so this must never reach it).
func validateName(name string, derived ...string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidName)
	}
	if len(name) > maxNameLength {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidName, len(name), maxNameLength)
	}
	if reservedName(name) {
		return fmt.Errorf("%w: %q: names starting with %q or %q are fairrw's own keys", ErrInvalidName, name, reservedPrefix+":", reservedPrefix+"_")
	}
	want := slot.Of(name)
	for _, key := range derived {
		if slot.Of(key) != want {
			return fmt.Errorf("%w: %q: its keys would not share one cluster slot (use a balanced, non-empty {hash tag})", ErrInvalidName, name)
		}
	}
	return nil
}

// reservedName reports whether name starts like one of fairrw's own keys:
// "fairrw:" or "fairrw_".
func reservedName(name string) bool {
	rest, ok := strings.CutPrefix(name, reservedPrefix)
	return ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "_"))
}

func slotOf(key string) uint16 { return slot.Of(key) }
