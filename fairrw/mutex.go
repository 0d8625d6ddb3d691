package fairrw

import "context"

// A Mutex is a handle on one distributed reentrant mutex that shares its
// lock with Java Redisson's RLock: the same hash (the lock name, with one
// field "<client UUID>:<owner id>" = that owner's hold count), the same PX
// lease renewed every third of it by the Client's watchdog, the same channel
// "redisson_lock__channel:{N}" and unlock message, so that a Go service and
// a Java service exclude each other on one name. The Client's Policy does
// not apply: an RLock has one mode and admits whoever asks first after a
// release (it is not fair).
//
// Every Lock and TryLock call is a new owner (a Java thread), so a handle may
// be shared by goroutines that must exclude each other. Reentrancy is
// explicit: Lease.Lock on a Mutex's Lease takes a further hold for the same
// owner, with its own lease, unlocked on its own; the mutex is free once
// every Lease of its owner is unlocked.
//
// A name is either a mutex or a read-write lock: Lock on a name held as a
// read-write lock, and RWMutex calls on a name held as a mutex, return
// ErrPolicyMismatch and change nothing (in Java the two corrupt each other).
//
// Get handles from Client.Mutex; do not copy them. A Mutex is safe for
// concurrent use.
type Mutex struct {
	rw *RWMutex
}

// Mutex returns a handle on the mutex name; every acquire on it is a new
// lock owner (a Java thread). An invalid name is reported by the handle's first call
// (ErrInvalidName), before any command.
func (c *Client) Mutex(name string) *Mutex {
	return &Mutex{rw: c.handle(mutexPolicy{}, c.mutexTel, name)}
}

// Name returns the lock name.
func (m *Mutex) Name() string { return m.rw.Name() }

// Lock takes the mutex, waiting until it is granted or ctx is done. On
// cancellation it returns an error wrapping ctx.Err() and leaves nothing
// behind in Redis. With WithLease the lease is not renewed, as Java's
// lock(leaseTime).
func (m *Mutex) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.rw.traced(ctx, "fairrw.Mutex.Lock", Write, true, opts)
}

// TryLock makes one attempt at the mutex and returns ErrNotAcquired if
// another owner holds it.
func (m *Mutex) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.rw.traced(ctx, "fairrw.Mutex.TryLock", Write, false, opts)
}

// ForceUnlock frees the mutex whoever holds it and wakes its waiters, as
// Java's forceUnlock; it returns ErrNotHeld if it was not held, and
// ErrPolicyMismatch (changing nothing) if the name is a read-write lock.
// Holders learn it at their next renewal or unlock.
func (m *Mutex) ForceUnlock(ctx context.Context) error {
	return m.rw.ForceUnlock(ctx, Write)
}
