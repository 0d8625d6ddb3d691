package fairrw

import "context"

// A Mutex is a handle on one distributed reentrant mutex, shared with Java
// Redisson's RLock (docs/redisson.md). It admits whoever asks first after a
// release. Every Lock and TryLock is a new owner; the mutex is free once
// every Lease of its owner is unlocked. A Mutex may be shared by goroutines
// and must not be copied.
type Mutex struct {
	rw *RWMutex
}

// lockName returns the lock name.
func (m *Mutex) lockName() string { return m.rw.lockName() }

// Lock takes the mutex, waiting until it is granted or ctx is done. On
// cancellation it returns an error wrapping ctx.Err() and leaves nothing held.
func (m *Mutex) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.rw.traced(ctx, "fairrw.Mutex.Lock", Write, true, opts)
}

// TryLock makes one attempt at the mutex and returns ErrNotAcquired if
// another owner holds it.
func (m *Mutex) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.rw.traced(ctx, "fairrw.Mutex.TryLock", Write, false, opts)
}

// ForceUnlock frees the mutex whoever holds it and wakes its waiters. It
// returns ErrNotHeld if it was not held, and ErrPolicyMismatch, changing
// nothing, on a read-write lock. Holders learn it at their next renewal.
func (m *Mutex) ForceUnlock(ctx context.Context) error {
	return m.rw.ForceUnlock(ctx, Write)
}
