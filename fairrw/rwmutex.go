package fairrw

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// An RWMutex is a handle on one distributed read-write lock, and one owner of
// it. Many owners may hold reads together; a write is held by one owner alone.
//
// Holds are reentrant per handle: the same handle may take the lock again,
// each acquire returns its own Lease, and each Lease is unlocked once. The
// owner of the write may also take reads (a downgrade: release the write and
// keep reading). A reader never gets the write (no upgrade): TryLock returns
// ErrNotAcquired, and so does Lock, at once, rather than wait for itself.
//
// Goroutines that must exclude each other need separate handles: a handle is
// safe for concurrent use, but two goroutines on one handle are one owner and
// share its holds. Get handles from Client.RWMutex; do not copy them.
//
// Reentrancy lasts one tenure: from an acquire while the handle holds
// nothing until it again holds nothing (every Lease unlocked or lost) with
// no acquire in flight. Each new tenure writes under a new owner id (see
// Owner), so a hold that Redis kept after its Lease ended (an unlock lost in
// a failover, a lease lost locally while Redis still had it) is another
// owner's to the handle: it is never re-entered, and blocks until its lease
// runs out.
//
// Which waiter is admitted next is the Client's Policy.
type RWMutex struct {
	c      *Client
	policy policyImpl // the Client's, or the Redisson RLock format for a Mutex
	tel    *telemetry // the Client's instruments, with the policy's name
	keys   lockKeys
	err    error // the name's validation error, returned by every call

	// mu guards the tenure (tenure.go): its owner and what stands on it.
	// The counts decide whether a tenure has ended, so they change under
	// the same lock as the owner is chosen.
	mu        sync.Mutex
	ownerID   uint64
	owner     string     // "<client UUID>:<owner id>"
	held      holdCounts // leases this handle holds, for the upgrade check
	acquiring int64      // acquires in flight: they may still be granted under owner
	tenured   bool       // a tenure has begun under owner: the next needs a new one
}

// Name returns the lock name.
func (m *RWMutex) Name() string { return m.keys.name }

// OwnerID returns the owner id of the handle's current tenure, unique within
// its Client. On the wire the owner is "<Client.ID()>:<OwnerID()>", as a
// Redisson thread. It changes when a new tenure begins (see Owner).
func (m *RWMutex) OwnerID() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ownerID
}

// Owner returns the owner identity written to Redis for the handle's current
// tenure, "<client UUID>:<owner id>": the owner of its holds while it holds
// or acquires anything, and of its last holds after that. It changes when a
// new tenure begins: the first acquire after the handle held nothing and
// acquired nothing draws a new owner id. Before its first acquire, a handle
// has the id it was created with, which its first tenure uses.
func (m *RWMutex) Owner() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owner
}

// Lock takes the write lock, waiting until it is granted or ctx is done. On
// cancellation it returns an error wrapping ctx.Err() and leaves nothing
// behind in Redis.
//
// A lease is counted from the moment its attempt was first sent. An attempt
// that took longer than the lease to be answered (retried through an outage
// or a failover) is given back rather than returned already lost: Lock then
// tries again, and TryLock and TryRLock return ErrNotAcquired.
func (m *RWMutex) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.Lock", Write, true, opts)
}

// RLock takes a read lock, waiting until it is granted or ctx is done.
func (m *RWMutex) RLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.RLock", Read, true, opts)
}

// TryLock makes one attempt at the write lock and returns ErrNotAcquired if
// it is taken.
func (m *RWMutex) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.TryLock", Write, false, opts)
}

// TryRLock makes one attempt at a read lock and returns ErrNotAcquired if a
// writer (or, depending on the policy, a waiting writer) stands in the way.
func (m *RWMutex) TryRLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.TryRLock", Read, false, opts)
}

// ForceUnlock frees the lock whoever holds it, but only if it is held in
// mode, and wakes its waiters; it returns ErrNotHeld otherwise. Holders are
// not told at once: they learn it at their next renewal (or unlock).
func (m *RWMutex) ForceUnlock(ctx context.Context, mode Mode) error {
	if m.err != nil {
		return m.err
	}
	if mode != Read && mode != Write {
		return fmt.Errorf("%w: mode %d", ErrInvalidOption, mode)
	}
	if err := m.c.enter(); err != nil {
		return err
	}
	defer m.c.leave()
	freed, err := m.policy.forceUnlock(ctx, m.c.rdb, &m.keys, mode, m.c.publish)
	if err != nil {
		return fmt.Errorf("fairrw: force unlock %q: %w", m.keys.name, err)
	}
	if !freed {
		return fmt.Errorf("%w: %q is not locked for %s", ErrNotHeld, m.keys.name, mode)
	}
	return nil
}

// traced runs acquire inside its span (see WithTracerProvider) and records
// its duration and outcome.
func (m *RWMutex) traced(ctx context.Context, op string, mode Mode, wait bool, opts []AcquireOption) (*Lease, error) {
	ctx, tr := m.tel.startAcquire(ctx, op, m.keys.name, mode)
	l, err := m.acquire(ctx, mode, wait, opts, &tr.attempts)
	tr.end(l, err)
	return l, err
}

// acquire takes a hold of mode, counting its attempts in attempts.
func (m *RWMutex) acquire(ctx context.Context, mode Mode, wait bool, opts []AcquireOption, attempts *int) (*Lease, error) {
	cfg, err := m.prepare(mode, opts)
	if err != nil {
		return nil, err
	}
	if cfg.owner, err = m.begin(mode); err != nil {
		return nil, err
	}
	defer m.end() // runs after finish: a granted lease is counted by then
	if err := m.c.enter(); err != nil {
		return nil, err
	}
	defer m.c.leave()

	*attempts++
	first, err := m.attempt(ctx, mode, cfg, wait, false)
	if err != nil && wait {
		m.cancelWait(ctx, mode, cfg)
	}
	if err != nil || first.reply.granted {
		return m.finish(ctx, mode, cfg, first, err)
	}
	if !wait {
		return nil, &notAcquiredError{name: m.keys.name, mode: mode, bound: first.reply.wait}
	}
	got, err := m.wait(ctx, mode, cfg, first.reply.wait, attempts)
	if err != nil {
		m.cancelWait(ctx, mode, cfg)
	}
	return m.finish(ctx, mode, cfg, got, err)
}

// prepare validates a call before anything is sent.
func (m *RWMutex) prepare(mode Mode, opts []AcquireOption) (acquireConfig, error) {
	var cfg acquireConfig
	if m.err != nil {
		return cfg, m.err
	}
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("%w: nil AcquireOption", ErrInvalidOption)
		}
		if err := o.applyAcquire(&cfg); err != nil {
			return cfg, err
		}
	}
	if !cfg.explicit {
		cfg.lease = m.c.leaseTime
	}
	return cfg, nil
}

// finish turns a granted attempt into a Lease, unless the Client began
// closing meanwhile: then the hold is given back and ErrClosed returned.
func (m *RWMutex) finish(ctx context.Context, mode Mode, cfg acquireConfig, got attemptResult, err error) (*Lease, error) {
	if err != nil {
		return nil, err
	}
	if m.c.isClosing() {
		m.settle(ctx, mode, cfg.owner, got.attempt)
		return nil, ErrClosed
	}
	return newLease(ctx, m, mode, cfg, got), nil
}

// wait blocks until a grant, ctx's end or Close. It joins the lock's wait
// group first (so no wake-up is lost between a failed attempt and the wait),
// waits for its subscription, then retries on every wake-up, and in any case
// no later than the PTTL that the last failed attempt returned.
func (m *RWMutex) wait(ctx context.Context, mode Mode, cfg acquireConfig, bound time.Duration, attempts *int) (attemptResult, error) {
	w := m.c.waits.join(&m.keys, mode, cfg.owner)
	defer m.c.waits.leave(w)
	m.tel.waiting(mode, 1)
	defer m.tel.waiting(mode, -1)
	if err := w.awaitSubscription(ctx, m.retryBound(bound)); err != nil {
		return attemptResult{}, m.waitError(err)
	}
	for {
		*attempts++
		got, err := m.attempt(ctx, mode, cfg, true, true)
		if err != nil {
			return attemptResult{}, err
		}
		if got.reply.granted {
			got.woken = w.source
			m.c.waits.granted(w)
			return got, nil
		}
		if err := w.sleep(ctx, m.retryBound(got.reply.wait)); err != nil {
			return attemptResult{}, m.waitError(err)
		}
	}
}

// cancelWait withdraws a waiter that gave up, on a context detached from
// the caller's cancellation: a fair policy's queue entry would otherwise
// block others until it expires.
func (m *RWMutex) cancelWait(ctx context.Context, mode Mode, cfg acquireConfig) {
	if !m.policy.queued() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.unlockTimeout)
	defer cancel()
	req := m.request(mode, cfg)
	_ = m.policy.cancelWait(ctx, m.c.rdb, &m.keys, &req) // else the entry expires with its lease
}

func (m *RWMutex) waitError(err error) error {
	if err == ErrClosed {
		return ErrClosed
	}
	return fmt.Errorf("fairrw: waiting for %q: %w", m.keys.name, err)
}

// retryBound turns a PTTL into the longest a waiter sleeps: Redis sends
// nothing when a lock expires (and expires keys late), so the waiter itself
// comes back when the PTTL runs out; the attempt then expires the key.
func (m *RWMutex) retryBound(pttl time.Duration) time.Duration {
	if m.policy.queued() {
		// A queue entry lives a lease unless its waiter tries again.
		pttl = min(pttl, m.c.leaseTime/3)
	}
	switch {
	case pttl == -time.Millisecond: // a key without TTL: cannot happen, but never sleep forever
		return m.c.leaseTime
	case pttl < time.Millisecond:
		return time.Millisecond
	default:
		return pttl
	}
}

// notAcquiredError is TryLock's refusal. It carries the PTTL the refused
// attempt returned, the longest a quorum waiter sleeps before its next round.
type notAcquiredError struct {
	name  string
	mode  Mode
	bound time.Duration
}

// Error names the lock and the mode refused.
func (e *notAcquiredError) Error() string {
	return fmt.Sprintf("%s: %q (%s)", ErrNotAcquired, e.name, e.mode)
}

// Unwrap makes errors.Is(err, ErrNotAcquired) hold.
func (e *notAcquiredError) Unwrap() error { return ErrNotAcquired }
