package history

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// A Store is the resource a lock guards in the fencing tests: a counter
// that accepts an increment only with a fencing token at least the highest
// it has seen, as storage guarded by fairrw should.
//
// The fence check is atomic, but the increment itself is a read, a yield
// and a write, as a read-modify-write of a real resource would be: only
// the lock keeps two holders from interleaving, so holders that overlap
// lose updates, and Check sees it. Create a Store as a zero value; it is
// safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	highest  uint64
	value    atomic.Int64
	accepted atomic.Int64
	rejected atomic.Int64
}

// Increment adds one to the counter if token is at least the highest token
// seen, and reports whether it did. A refused increment changes nothing.
func (s *Store) Increment(token uint64) bool {
	s.mu.Lock()
	if token < s.highest {
		s.mu.Unlock()
		s.rejected.Add(1)
		return false
	}
	s.highest = token
	s.mu.Unlock()
	v := s.value.Load()
	runtime.Gosched() // widen the window an overlapping holder would hit
	s.value.Store(v + 1)
	s.accepted.Add(1)
	return true
}

// Value returns the counter.
func (s *Store) Value() int { return int(s.value.Load()) }

// Highest returns the highest token accepted.
func (s *Store) Highest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.highest
}

// Rejected returns how many increments were refused.
func (s *Store) Rejected() int { return int(s.rejected.Load()) }

// Check reports a lost update: expectedAccepted is the number of
// Increments that returned true, as the caller counted them; the counter
// must equal it (a refused increment never changed the counter, and no
// accepted one was overwritten by a concurrent holder).
func (s *Store) Check(expectedAccepted int) error {
	accepted, value := int(s.accepted.Load()), int(s.value.Load())
	switch {
	case accepted != expectedAccepted:
		return fmt.Errorf("history: store accepted %d increments, the caller counted %d", accepted, expectedAccepted)
	case value != accepted:
		return fmt.Errorf("history: lost update: store counter is %d after %d accepted increments (%d refused)", value, accepted, s.Rejected())
	}
	return nil
}
