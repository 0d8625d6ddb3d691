package fairrw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/wait"
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
		return m.policy.forceUnlock(ctx, m.c.redis(), &m.keys, f.mode, m.c.publishCmd())
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
		return acquireConfig{lease: m.c.settings().leaseTime}, nil
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
		cfg.lease = m.c.settings().leaseTime
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
	if m.c.telemetry().health.down.Load() && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
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
		pttl = min(pttl, m.c.settings().leaseTime/3)
	}
	switch {
	case pttl == -time.Millisecond: // a key without TTL: cannot happen, but never sleep forever
		return m.c.settings().leaseTime
	case pttl < time.Millisecond:
		return time.Millisecond
	default:
		return pttl
	}
}

// newOwner draws a new owner id from the Client's counter, keeping
// Redisson's "<uuid>:<long>" form.
func (m *RWMutex) newOwner() *owner {
	o := &owner{m: m, id: m.c.newOwnerID(), mu: make(chan struct{}, 1)}
	o.leases = o.first[:0]
	return o
}

// releaseWithin runs the policy's release of one hold of mode by owner o
// (or, with abandon, gives o up), writing st as what o still holds, to a
// definite outcome, bounded by ctx and deadline (zero: by ctx alone, which
// must then carry a deadline or be cancelled: see bounded), retrying lost
// replies with the same request id and stamp (the unlock latch and the
// accept window make that idempotent).
// The latch is deleted afterwards, as Java does, unless a try failed: a
// copy of that try may still reach Redis within the accept window, and
// must find the latch there rather than write an owner's state that is no
// longer true.
//
// With unreachableFails it gives up at once when it cannot connect (no try
// has reached Redis): a quorum's release of a node that is down must not
// hold up the release of the others. Its caller goes on with it in the
// background (Lease.followUp).
//
// A Shutdown cut short stops it too.
func (m *RWMutex) releaseWithin(ctx context.Context, deadline time.Time, o *owner, mode Mode, st ownerState, abandon, unreachableFails bool) (releaseResult, error) {
	return m.send(ctx, deadline, m.newRelease(o, mode, st, abandon), unreachableFails)
}

// A releaseCall is one release request and what its tries so far tell:
// tries of one call share its request id and stamp, so that Redis applies
// it once however many copies reach it.
type releaseCall struct {
	m       *RWMutex
	req     releaseRequest
	reached bool // a try failed after it may have reached Redis
}

// newRelease prepares a release of one hold of mode by owner o (see
// releaseWithin).
func (m *RWMutex) newRelease(o *owner, mode Mode, st ownerState, abandon bool) *releaseCall {
	request, latch := m.newUnlockRequest()
	return &releaseCall{m: m, req: releaseRequest{
		mode:    mode,
		owner:   o.id,
		request: request,
		latch:   latch,
		abandon: abandon,
		state:   st,
		// A read attempt given up may have been granted unseen.
		mayRead: o.read || mode == Read,
		passed:  o.passed,
		// The fast release only if no waiter of this Client is queued
		// behind the hold: that one's queue entry would make it a wasted
		// round trip (a waiter of another Client still may).
		fast:      !abandon && o.fast && o.passed == 0 && o.reserve <= 1 && !m.c.waiters().Waiting(&m.keys.Keys),
		stamp:     time.Now(),
		window:    m.c.acceptWindow(),
		latchTTL:  m.c.acceptWindow(),
		markerTTL: o.markerTTL(),
		queue:     m.c.settings().leaseTime,
		publish:   m.c.publishCmd(),
		// A writer this release granted the lock to may wait in this
		// Client: the reply wakes it before the message would.
		grants: m.c.waiters(),
	}}
}

// newUnlockRequest returns a new unlock request id and its latch's key
// (policyImpl.unlockLatch). Every policy's latch is the name's latch
// prefix followed by the id (wire.FairKeys.UnlockLatch): then one string
// holds both.
func (m *RWMutex) newUnlockRequest() (request, latch string) {
	if p := m.keys.fair.Latch; p != "" {
		return newRequestIDAfter(p)
	}
	request = newRequestID()
	return request, m.policy.unlockLatch(&m.keys, request)
}

func (rc *releaseCall) procedure() string {
	if rc.req.abandon {
		return "fairrw.give_back"
	}
	return "fairrw.release"
}

// call sends one try of the release, as bounded runs it.
func (rc *releaseCall) call(ctx context.Context) (releaseResult, error) {
	m := rc.m
	return m.policy.release(ctx, m.c.redis(), &m.keys, &rc.req)
}

// send tries rc until Redis answers it, within ctx and deadline (zero:
// ctx alone; see releaseWithin). A give-up (abandon) is tried for as long
// as ctx lasts: Redis never refuses one as late. Its latch is always
// deleted once answered: a late copy of an earlier try can only remove
// what is gone already.
func (m *RWMutex) send(ctx context.Context, deadline time.Time, rc *releaseCall, unreachableFails bool) (releaseResult, error) {
	var cancel context.CancelFunc
	if deadline.IsZero() {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}
	defer cancel()
	// A Shutdown cut short stops it: boundedHalting cancels ctx then, and
	// the backoff below wakes on halt.
	req := &rc.req
	backoff := wait.NewBackoff(wait.MinRetryBackoff, wait.MaxRetryBackoff)
	restamped := false
	for {
		res, err := boundedHalting[releaseResult](m.c, ctx, cancel, rc)
		if err == nil && res == releaseStale {
			// Redis refused a copy that reached it after its window (it
			// was paused, or the copy stalled): nothing was changed, and
			// any other copy of this stamp is refused too. Send it again
			// with a new stamp, under the same request id.
			if restamped && time.Since(req.stamp) < m.c.retryWindow() {
				return res, fmt.Errorf("%w: %q: Redis's clock is ahead of this machine's by more than %v", ErrClockSkew, m.keys.name, m.c.acceptWindow())
			}
			req.stamp, restamped = time.Now(), true
			continue
		}
		if err == nil {
			if !rc.reached || req.abandon {
				m.c.dropLatch(req.latch)
			}
			return res, nil
		}
		rc.reached = rc.reached || !unsent(err)
		if definite(err) || (unreachableFails && !rc.reached) {
			return res, tag(fmt.Sprintf("fairrw: unlock %q: %s", m.keys.name, reason(err)), err)
		}
		if (!req.abandon && time.Since(req.stamp) >= m.c.retryWindow()) || backoff.Wait(ctx, m.c.haltContext().Done()) != nil {
			return res, tag(fmt.Sprintf("fairrw: unlock %q: %s", m.keys.name, reason(err)), err)
		}
	}
}

// giveBack gives up owner o after an acquire of mode (asking for lease)
// that ends without a Lease: cancelled, closed, failed, or granted too late
// to be used. One release with the abandon flag marks the owner given up
// (no copy of its attempts takes anything from then on), releases whatever
// hold it was granted meanwhile, and withdraws its queue entries; Redis
// applies all of it at once, so whenever it runs, nothing of o stays. A
// give-up is never refused as stale (see lua/common.lua): it only removes,
// and o is never used again.
//
// It is tried for cleanupGrace, then in the background until Redis answers,
// or until it is moot: a copy of o's attempts takes nothing after the
// accept window, and what one took then lasts a lease at most.
func (m *RWMutex) giveBack(o *owner, mode Mode, lease time.Duration) {
	rc := m.newRelease(o, mode, ownerState{}, true) // one request, however many tries
	try := func(ctx context.Context) bool {
		_, err := m.send(ctx, time.Time{}, rc, false)
		if err == nil {
			m.c.heldOwners().released(o)
		}
		return err == nil || definite(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.c.settings().cleanupGrace)
	done := try(ctx)
	cancel()
	if done {
		return
	}
	moot := time.Now().Add(m.c.acceptWindow() + max(lease, m.c.settings().leaseTime) + leaseMargin)
	m.c.followUp(m, "give back", moot, try)
}

// giveUpRunOut gives owner o up, in the background, once its Leases have
// all ended with no release (their leases ran out, or a renewal found the
// hold gone) while a copy of one of its attempts may still be on its way
// (o.unsure). Such a copy, reaching Redis within its accept window, would
// take the lock again for an owner no Lease stands for, and keep it for
// the lease it asked for: the conformance test's Inspect saw an owner hold
// a write, with a token 0.9 s newer than its Lease's, after that Lease's
// 200 ms lease ran out (a copy of its first attempt held back in the
// network). A release gives such an owner up (see Lease.releaseOnce); this
// does for a Lease that ran out: it marks o, so that no copy takes
// anything, and releases what it may still hold. A Lease of o still alive
// (a further hold) keeps it, and its own end comes here again. It reads
// o.unsure under o's lock, as a further hold's attempt writes it.
// Close sends nothing: a give-up not begun when the Client closes is not
// sent (the copy's hold runs out, as without it). lease is the ended
// Lease's: the give-up is moot once what a copy could take has run out.
func (m *RWMutex) giveUpRunOut(o *owner, mode Mode, lease time.Duration) {
	m.c.backgroundTasks().run(func(ctx context.Context) {
		if o.lock(ctx) != nil {
			return
		}
		st := o.alive(nil, time.Now())
		idle := o.unsure && !o.givenUp && st.writes == 0 && len(st.reads) == 0 && ctx.Err() == nil && !m.c.isClosing()
		if idle {
			o.givenUp, o.unshared = true, true
		}
		o.unlock()
		if idle {
			m.giveBack(o, mode, max(lease, m.c.settings().leaseTime))
		}
	})
}

// restate writes back in Redis what owner o's Leases hold, after a further
// hold of mode (asking for lease) that failed once Redis may have applied
// it: granted there, but acknowledged by too few replicas
// (ErrNotReplicated, which says the grant was given back), or sent with an
// outcome never learned. No Lease stands for that hold, and the owner's
// Leases may all end with no change in Redis (left to expire, lost), which
// would leave it held for the refused hold's lease, with no Lease live and
// every waiter kept out. One release of mode writing what the Leases hold
// (as their own releases do) takes it back, and changes nothing else.
//
// An attempt whose outcome was never learned may still reach Redis after
// that release (a request its connection had not written yet when its ctx
// ended), until its accept window ends at late (zero: the attempt was
// answered): the state is written again once late has passed, when no
// copy of it can land any more.
//
// Call it with o's lock held. It is tried for cleanupGrace, then in the
// background, under o's lock again, until Redis answers (after late) or
// what it would take back has run out there.
func (m *RWMutex) restate(o *owner, mode Mode, lease time.Duration, late time.Time) {
	try := func(ctx context.Context) bool {
		sent := time.Now()
		st := o.written(nil, sent) // it renews the owner's watchdog Leases
		empty := st.writes == 0 && len(st.reads) == 0
		res, err := m.send(ctx, time.Time{}, m.newRelease(o, mode, st, o.unsure && empty), false)
		if err == nil && res != releaseNotHeld {
			o.confirmWritten(st, nil, sent)
		}
		if err == nil && empty {
			o.unshared = true // no read shares its hold any more
			m.c.heldOwners().released(o)
		}
		return err == nil || definite(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.c.settings().cleanupGrace)
	done := try(ctx)
	cancel()
	if done && late.IsZero() {
		return
	}
	locked := func(ctx context.Context) bool {
		if o.lockBy(ctx, time.Time{}) != nil {
			return false
		}
		defer o.unlock()
		return try(ctx)
	}
	moot := later(time.Now(), late).Add(m.c.acceptWindow() + lease + leaseMargin)
	m.c.followUp(m, "restate", moot, func(ctx context.Context) bool {
		if time.Now().Before(late) {
			done = done || locked(ctx)
			return false // again once no copy of the attempt can land
		}
		return locked(ctx)
	})
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

// waitersIn reads how many writers are queued for the lock in Redis and,
// with pf, how many PhaseFair readers wait, arming client tracking on both
// keys: their next change pushes an invalidation (cohorts.invalidated). A
// refusal by Redis (an ACL) makes the Client's cohorts blind.
func (m *RWMutex) waitersIn(ctx context.Context, pf bool) (writers, readers int64, err error) {
	c := m.c
	ctx, cancel := context.WithTimeout(ctx, c.retryWindow())
	defer cancel()
	type counts struct{ writers, readers int64 }
	n, err := bounded(c, ctx, func(ctx context.Context) (counts, error) {
		b := c.redis().B()
		cmds := []rueidis.CacheableTTL{rueidis.CT(b.Zcard().Key(m.keys.fair.Queue).Cache().Pin(), c.settings().leaseTime)}
		if pf {
			cmds = append(cmds, rueidis.CT(b.Zcard().Key(m.keys.fair.Waiting).Cache().Pin(), c.settings().leaseTime))
		}
		res := c.redis().DoMultiCache(ctx, cmds...)
		var n counts
		var err error
		if n.writers, err = res[0].AsInt64(); err != nil {
			return n, err
		}
		if pf {
			n.readers, err = res[1].AsInt64()
		}
		return n, err
	})
	if _, refused := rueidis.IsRedisErr(err); refused {
		c.writeCohorts().blind.Store(true)
	}
	return n.writers, n.readers, err
}
