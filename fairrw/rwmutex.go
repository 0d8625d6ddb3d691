package fairrw

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// An RWMutex is a handle on one distributed read-write lock. Every Lock,
// RLock, TryLock and TryRLock is a new hold: calls on one handle exclude each
// other as calls from two processes do, and a goroutine that holds a read and
// calls Lock waits for its own read. Each is a new owner in Redis, except a
// Lock passed the write within its Client's cohort (WithCohorts), which
// holds under the owner it was passed from, and a read that shares its
// Client's read hold of the name, which holds under that hold's owner.
// Reentrancy and downgrade are explicit (Lease.Lock, Lease.RLock). A handle
// may be shared and must not be copied.
type RWMutex struct {
	c      *Client
	policy policyImpl // the Client's, or the Redisson RLock format for a Mutex
	tel    *telemetry // the Client's instruments, with the policy's name
	keys   lockKeys
	err    error // the name's validation error, returned by every call
}

// lockName returns the lock name.
func (m *RWMutex) lockName() string { return m.keys.name }

// Lock takes the write lock, waiting until it is granted or ctx is done. It
// returns by ctx's deadline whatever Redis does. On cancellation it returns an
// error wrapping ctx.Err(), and gives back what Redis granted or queued for
// it. A grant answered after its lease ran out is given back: Lock tries
// again, and TryLock and TryRLock return ErrNotAcquired.
func (m *RWMutex) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.Lock", Write, true, opts)
}

// RLock takes a read lock, waiting as Lock does. While another read of the
// same Client holds the name and no writer waits, it shares that hold with
// no Redis call (WithCohorts).
func (m *RWMutex) RLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.RLock", Read, true, opts)
}

// TryLock makes one attempt at the write lock and returns ErrNotAcquired if it
// is taken.
func (m *RWMutex) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.TryLock", Write, false, opts)
}

// TryRLock makes one attempt at a read lock and returns ErrNotAcquired if a
// writer (or, depending on the policy, a waiting writer) stands in the way.
func (m *RWMutex) TryRLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.TryRLock", Read, false, opts)
}

// ForceUnlock frees the lock whoever holds it, if it is held in mode, and
// admits whoever is next; otherwise it returns ErrNotHeld. Holders learn it at
// their next renewal. When ctx ends first, it may or may not have reached
// Redis. Under a fair policy, a lock whose state records another policy or
// protocol is refused with ErrPolicyMismatch and left as it was, as an
// acquire is: its rules are not this Client's. A lock it freed is traced,
// counted (fairrw.force_unlocks) and logged with the owners that held it.
func (m *RWMutex) ForceUnlock(ctx context.Context, mode Mode) error {
	if m.err != nil {
		return m.err
	}
	if mode != Read && mode != Write {
		return fmt.Errorf("%w: mode %d", ErrInvalidOption, mode)
	}
	if err := m.c.enter(); err != nil {
		return closedError(m.keys.name)
	}
	defer m.c.leave()
	f := m.tel.startForceUnlock(ctx, m.keys.name, mode)
	err := m.forceUnlock(&f)
	m.tel.endForceUnlock(&f, err)
	return err
}

// forceUnlock is ForceUnlock, traced by f. When someone watches, it reads
// first who holds the lock in f.mode (Inspect), to tell whose hold it ended.
func (m *RWMutex) forceUnlock(f *forceTrace) error {
	ctx := f.ctx
	if err := m.c.await(ctx, m.keys.name); err != nil {
		return err
	}
	if m.tel.watched(f) {
		f.holders = m.holders(ctx, f.mode)
	}
	freed, err := boundedAs(m.c, ctx, "fairrw.force_unlock", func(ctx context.Context) (bool, error) {
		return m.policy.forceUnlock(ctx, m.c.rdb, &m.keys, f.mode, m.c.publish)
	})
	if err != nil {
		return tag(fmt.Sprintf("fairrw: force unlock %q: %s", m.keys.name, unavailableReason(m.c.address(), err)), andEnded(ctx, err)...)
	}
	if !freed {
		return fmt.Errorf("%w: %q is not locked for %s", ErrNotHeld, m.keys.name, f.mode)
	}
	return nil
}

// holders returns the owners holding the lock in mode, as Inspect reads
// them (none if it cannot: the force goes on regardless).
func (m *RWMutex) holders(ctx context.Context, mode Mode) []string {
	if validateInspectName(m.keys.name) != nil {
		return nil // Inspect's keys would not share the name's slot
	}
	info, err := m.c.inspect(ctx, m.keys.name)
	if err != nil {
		return nil
	}
	owners := []string{}
	for _, h := range info.Holders {
		if h.Mode == mode {
			owners = append(owners, h.Owner)
		}
	}
	return owners
}

// traced runs acquire inside its span (see WithTracerProvider) and records
// its duration and outcome.
func (m *RWMutex) traced(ctx context.Context, op string, mode Mode, wait bool, opts []AcquireOption) (*Lease, error) {
	ctx, tr := m.tel.startAcquire(ctx, op, m.keys.name, mode)
	l, err := m.acquire(ctx, mode, wait, opts, &tr.stats)
	tr.end(l, err)
	return l, err
}

// prepare validates a call before anything is sent.
func (m *RWMutex) prepare(mode Mode, opts []AcquireOption) (acquireConfig, error) {
	if m.err != nil {
		return acquireConfig{}, m.err
	}
	if len(opts) == 0 {
		// The common call, apart: the loop below hands cfg to each
		// option's method, which moves it to the heap.
		return acquireConfig{lease: m.c.leaseTime}, nil
	}
	var cfg acquireConfig
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

// waitError is the error of a wait that err ended. A wait whose ctx ends
// while the Client finds Redis unreachable (see redisHealth) ended for
// Redis's outage, not for the lock: no release could reach it. Its error
// wraps ErrUnavailable beside ctx's.
func (m *RWMutex) waitError(err error) error {
	if err == ErrClosed {
		return closedError(m.keys.name)
	}
	if m.c.tel.health.down.Load() && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return tag(fmt.Sprintf("fairrw: waiting for %q while Redis at %s is unreachable: %s", m.keys.name, m.c.address(), reason(err)), ErrUnavailable, err)
	}
	return tag(fmt.Sprintf("fairrw: waiting for %q: %s", m.keys.name, reason(err)), err)
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
