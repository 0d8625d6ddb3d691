package fairrw

import (
	"fmt"

	"github.com/fairrw/rwlock/compat"
)

// A handle's tenure runs from an acquire while it holds nothing and acquires
// nothing to the moment it again holds nothing with no acquire in flight.
// The holds of one tenure share one owner and are reentrant; the next tenure
// begins under a new owner id (begin says why). RWMutex.mu guards the owner
// and the counts that decide whether a tenure has ended.

// begin counts an acquire of mode as in flight, until end, and returns the
// owner it acquires as: the current tenure's, or a new one if the handle's
// last tenure has ended.
//
// Reusing the owner of an ended tenure would be wrong. Redis may still have
// a hold under it that the handle no longer has: an Unlock that the primary
// confirmed but a promoted replica never received, or a lease lost locally
// (renewals could not reach Redis) that Redis kept. The scripts would take
// the acquire for a re-entry of that ghost: the old fencing token for a new
// tenure, the ghost's count left behind by the new tenure's Unlock (and
// renewed by its watchdog as long as the handle keeps locking), and under
// Redisson one more lease added to the PTTL. Under a new owner the ghost is
// another owner's hold that no one renews: it blocks until its lease runs
// out, no longer. The id comes from the Client's counter, so the owner keeps
// Redisson's "<uuid>:<long>" form.
//
// The first tenure keeps the id the handle was created with, so Owner names
// the owner of the first hold before it is taken.
func (m *RWMutex) begin(mode Mode) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A reader asking for the write would wait for itself forever. An owner
	// that holds the write (and maybe reads under it) may take it again.
	if mode == Write && m.held.upgrade() {
		return "", fmt.Errorf("%w: %q: this owner holds a read, and a read is never upgraded to the write", ErrNotAcquired, m.keys.name)
	}
	if m.tenured && m.held.reads+m.held.writes+m.acquiring == 0 {
		m.ownerID = m.c.owners.Add(1)
		m.owner = compat.Owner(m.c.id, m.ownerID)
	}
	m.tenured = true
	m.acquiring++
	return m.owner, nil
}

// end counts an acquire begun by begin as over. It runs after a granted
// lease has been counted, so the tenure never looks ended in between.
func (m *RWMutex) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acquiring--
}

// count tracks the leases this handle holds, by mode: delta is +1 when a
// lease is granted, -1 when it ends, by Unlock or by loss alike (a lost
// lease ends its share of the tenure too).
func (m *RWMutex) count(mode Mode, delta int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held.add(mode, delta)
}

// holdCounts counts an owner's leases by mode (guarded by its owner's lock).
type holdCounts struct{ reads, writes int64 }

func (h *holdCounts) add(mode Mode, delta int64) {
	if mode == Read {
		h.reads += delta
	} else {
		h.writes += delta
	}
}

// upgrade reports whether the owner holds a read and not the write: a write
// would wait for itself.
func (h *holdCounts) upgrade() bool { return h.reads > 0 && h.writes == 0 }
