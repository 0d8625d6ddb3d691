package fairrw

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// An RWMutex is a handle on one distributed read-write lock. Many owners
// may hold reads together; the write is held by one owner alone. Get it from
// Client.RWMutex; it may be shared by goroutines and must not be copied.
//
// Every Lock, RLock, TryLock and TryRLock call is a new owner, as a
// goroutine on a sync.RWMutex is: calls on one handle, from one goroutine or
// many, exclude each other exactly as calls on two handles, or in two
// processes, do. A goroutine that holds a read and calls Lock waits for its
// own read, as with sync.RWMutex (until ctx ends).
//
// Reentrancy and downgrade are explicit: Lease.RLock and Lease.Lock take a
// further hold for the owner of a Lease, which never waits. The write's owner
// may take reads (a downgrade: release the write and keep reading); a
// reader never gets the write (no upgrade: ErrUpgrade).
//
// Which waiter is admitted next is the Client's Policy. Each hold is its
// own Lease, with its own lease time: no release of one shortens another,
// and a Lease that ended stops counting (see Lease).
type RWMutex struct {
	c      *Client
	policy policyImpl // the Client's, or the Redisson RLock format for a Mutex
	tel    *telemetry // the Client's instruments, with the policy's name
	keys   lockKeys
	err    error // the name's validation error, returned by every call
}

// Name returns the lock name.
func (m *RWMutex) Name() string { return m.keys.name }

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

// acquire takes a first hold of mode for a new owner, counting its
// attempts in attempts. An acquire that ends without a Lease gives its
// owner up wherever a trace of it may be left in Redis: a queue entry, or
// an attempt whose outcome was not learned.
func (m *RWMutex) acquire(ctx context.Context, mode Mode, wait bool, opts []AcquireOption, attempts *int) (*Lease, error) {
	cfg, err := m.prepare(mode, opts)
	if err != nil {
		return nil, err
	}
	if err := m.c.enter(); err != nil {
		return nil, err
	}
	defer m.c.leave()
	o := m.newOwner()
	// A Lock that may queue joins the lock's waiters before its first
	// attempt when this Client already listens to the lock's channel: a
	// release that grants it the lock meanwhile is then not missed, and a
	// refused attempt goes straight to sleep.
	var early *waiter
	if wait && m.policy.queued() {
		early = m.c.waits.joinListening(&m.keys, m.policy, mode, o.id)
	}
	defer func() {
		if early != nil {
			m.c.waits.leave(early)
		}
	}()
	*attempts++
	got, err := m.attempt(ctx, o, mode, cfg, 0, wait, false)
	if wait && (errors.Is(err, errOutlasted) || errors.Is(err, errNoAnswer)) {
		// Lock goes on waiting: as a new owner after a grant that came too
		// late, as the same one after an attempt that got no answer.
		if errors.Is(err, errOutlasted) {
			m.abandon(ctx, o, mode)
			o = m.newOwner()
			if early != nil {
				m.c.waits.rename(early, o.id)
			}
		}
		got, err = attemptResult{reply: acquireReply{wait: time.Millisecond}}, nil
	}
	switch {
	case err == nil && !got.reply.granted && !wait:
		if o.unsure {
			m.abandon(ctx, o, mode)
		}
		return nil, &notAcquiredError{name: m.keys.name, mode: mode, bound: got.reply.wait}
	case err == nil && !got.reply.granted:
		w := early
		early = nil // wait leaves it
		o, got, err = m.wait(ctx, o, mode, cfg, got, w, attempts)
	}
	if err != nil {
		if o.unsure || o.queued || errors.Is(err, errOutlasted) || errors.Is(err, ErrNotReplicated) {
			m.abandon(ctx, o, mode)
		}
		if errors.Is(err, errOutlasted) {
			return nil, &notAcquiredError{name: m.keys.name, mode: mode, bound: time.Millisecond}
		}
		return nil, err
	}
	if m.c.isClosing() {
		m.abandon(ctx, o, mode)
		return nil, ErrClosed
	}
	return newLease(ctx, o, mode, cfg, got), nil
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

// wait blocks until a grant, ctx's end or Close. It joins the lock's wait
// group first (so no wake-up is lost between a failed attempt and the wait),
// waits for its subscription, then retries on every wake-up, and in any case
// no later than the PTTL that the last failed attempt returned. A release
// that grants the owner the lock (grant on release, see lua/fair_lib.lua)
// ends the wait without another attempt. An attempt that got no answer is
// tried again as the same owner (a copy of it that still takes the lock is
// then found by the next attempt); a grant that came too late is given up,
// and the wait goes on as a new owner. It returns the owner it ended with.
func (m *RWMutex) wait(ctx context.Context, o *owner, mode Mode, cfg acquireConfig, first attemptResult, w *waiter, attempts *int) (*owner, attemptResult, error) {
	// joined: the waiter listened before the first attempt was sent, so
	// no release since is missed and the wait starts with a sleep.
	joined := w != nil && first.reply.refused
	if w == nil {
		w = m.c.waits.join(&m.keys, m.policy, mode, o.id)
	}
	defer m.c.waits.leave(w)
	m.tel.waiting(mode, 1)
	defer m.tel.waiting(mode, -1)
	// refused is when the last attempt that Redis refused was sent: a grant
	// made on the owner's behalf comes after it, and lasts at least until
	// then plus its queue entry's lease (zero: no such attempt yet).
	var refused time.Time
	var refusedUs uint64
	if first.reply.refused {
		refused, refusedUs = first.sent, first.reply.refusedUs
	}
	if err := w.awaitSubscription(ctx, m.retryBound(first.reply.wait)); err != nil {
		return o, attemptResult{}, m.waitError(err)
	}
	if joined {
		if err := w.sleep(ctx, m.retryBound(first.reply.wait)); err != nil {
			return o, attemptResult{}, m.waitError(err)
		}
	}
	for {
		if got, ok := m.grantedBy(w, refused, refusedUs, cfg); ok {
			if time.Now().Before(got.sent.Add(got.cover)) {
				return o, got, nil
			}
			// The grant's lease ran out before it was seen: give it back.
			m.abandon(ctx, o, mode)
			o = m.newOwner()
			m.c.waits.rename(w, o.id)
			refused = time.Time{}
		}
		*attempts++
		got, err := m.attempt(ctx, o, mode, cfg, 0, true, true)
		switch {
		case errors.Is(err, errOutlasted):
			m.abandon(ctx, o, mode)
			o = m.newOwner()
			m.c.waits.rename(w, o.id)
			refused = time.Time{}
			got.reply.wait = time.Millisecond
		case errors.Is(err, errNoAnswer):
			got.reply.wait = minRetryBackoff
		case err != nil:
			return o, got, err
		case got.reply.granted:
			got.woken = w.source
			m.c.waits.granted(w)
			return o, got, nil
		case got.reply.refused:
			refused, refusedUs = got.sent, got.reply.refusedUs
		}
		if err := w.sleep(ctx, m.retryBound(got.reply.wait)); err != nil {
			return o, attemptResult{}, m.waitError(err)
		}
	}
}

// grantedBy returns the grant a release made to the waiter's owner, if
// one was delivered and a refused attempt tells when it began at the
// earliest. The hold lasts until its queue entry's deadline or its lease,
// whichever is first, counted from that attempt's send: its local
// deadline never passes the one Redis keeps. A grant whose token is not
// above the server's clock at that refusal (refusedUs) was made before it:
// a message that stalled past a grant that has since run out (the refusal
// found the owner no longer holding), which must not count. Without such
// an attempt the next attempt takes the grant up instead.
func (m *RWMutex) grantedBy(w *waiter, refused time.Time, refusedUs uint64, cfg acquireConfig) (attemptResult, bool) {
	token, by, ok := w.takeGrant()
	if !ok || refused.IsZero() || token <= refusedUs || cfg.lease > m.c.leaseTime {
		// A lease longer than the queue entry's: the next attempt takes
		// the grant up, extending it to the whole lease.
		return attemptResult{}, false
	}
	return attemptResult{
		reply: acquireReply{granted: true, token: token},
		sent:  refused,
		cover: min(cfg.lease, m.c.leaseTime),
		woken: by,
	}, true
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
