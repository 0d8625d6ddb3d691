package fairrw

import (
	"context"
	"sync"
	"time"

	"github.com/fairrw/rwlock/internal/wire"
)

// Lock cohorting (Dice, Marathe and Shavit, PPoPP 2012): the Lock calls of
// one Client on one name form a cohort, which takes one place in Redis's
// queue. One of them, the leader, acquires in Redis as any Lock does; the
// others wait here, in arrival order. When the cohort's write hold ends by
// Unlock and another of them waits, the Client passes the hold to it
// without a Redis call: the hold stays the leader's owner's in Redis, which
// keeps renewing it, and the new Lease gets the next fencing token of the
// range Redis reserved with the grant (wire.TokenReserve). At most
// cohortPasses passes follow one Redis grant; then the next local waiter
// queues in Redis as the cohort's new leader, and the hold is released
// there, which grants it to the writer queued first (another Client's, if
// one queued before the leader). So a writer of another Client waits for at
// most cohortPasses+1 holds of each Client queued before it, instead of
// one, and Redis sees a writer waiting throughout.
//
// Only plain Locks join: a watchdog lease, a fair policy, no replica
// acknowledgement asked for. Everything else, and every read, goes to Redis
// as before.
type cohort struct {
	reg  *cohorts
	name string

	mu    sync.Mutex
	state cohortState
	refs  int    // Lock calls in the cohort, and one for a hold; under reg.mu
	lease *Lease // cohortHolding: the hold's current Lease (nil while a pass is made)
	// next and top are the tokens left to hand out (holding); passes counts
	// the passes since the Redis grant.
	next, top uint64
	passes    int
	waiters   []*cohortWaiter
	// queuing: the hold's run is over and its next leader, chosen already,
	// queues in Redis before the hold is released there (see prequeue).
	queuing bool
}

type cohortState uint8

const (
	cohortIdle    cohortState = iota
	cohortLeading             // a Lock of the cohort acquires in Redis
	cohortHolding             // a Lease of the cohort holds the write
)

// cohortPasses is how many passes follow one Redis grant at most: a
// bound on what another Client's writer waits for, and below the tokens
// each grant reserves.
const cohortPasses = 15

var _ = [wire.TokenReserve - 1 - cohortPasses]struct{}{} // cohortPasses < wire.TokenReserve

// minPassLeft is the least time, in leases, a hold must have left to be
// passed: a hold whose renewals are late goes back to Redis instead.
const minPassLeft = 3

// A cohortWaiter is a Lock waiting in a cohort for its turn.
type cohortWaiter struct {
	ctx  context.Context // the Lock's: the passed Lease's span links to it
	cfg  acquireConfig
	turn chan cohortTurn // buffered: the turn is given without blocking
}

// A cohortTurn is a Lease passed to a waiter, or (lease nil) the lead;
// queued, when set, is closed once the new leader's first attempt has
// reached Redis (see prequeue).
type cohortTurn struct {
	lease  *Lease
	queued chan struct{}
}

// cohorts are a Client's cohorts, by lock name.
type cohorts struct {
	mu sync.Mutex
	m  map[string]*cohort
}

// join returns name's cohort, counting the caller in until it calls done.
func (r *cohorts) join(name string) *cohort {
	r.mu.Lock()
	defer r.mu.Unlock()
	co := r.m[name]
	if co == nil {
		if r.m == nil {
			r.m = make(map[string]*cohort)
		}
		co = &cohort{reg: r, name: name}
		r.m[name] = co
	}
	co.refs++
	return co
}

// done counts a Lock call (or a hold) out; the last one forgets the cohort.
func (r *cohorts) done(co *cohort) {
	r.mu.Lock()
	defer r.mu.Unlock()
	co.refs--
	if co.refs == 0 {
		delete(r.m, co.name)
	}
}

// cohortFor returns the cohort a Lock with cfg joins, or nil when it goes
// to Redis on its own.
func (m *RWMutex) cohortFor(mode Mode, wait bool, cfg acquireConfig) *cohort {
	c := m.c
	if !c.cohorting || mode != Write || !wait || !m.policy.queued() || cfg.explicit || cfg.notify || cfg.unreachableFails || c.syncReplicas > 0 {
		return nil
	}
	return c.cohorts.join(m.keys.name)
}

// lockInCohort is Lock in co: it leads, or waits for its turn.
func (m *RWMutex) lockInCohort(ctx context.Context, co *cohort, cfg acquireConfig, attempts *acquireStats) (*Lease, error) {
	defer co.reg.done(co)
	co.mu.Lock()
	if co.state == cohortIdle {
		co.state = cohortLeading
		co.mu.Unlock()
		return m.leadQueued(ctx, co, cfg, attempts, false, nil)
	}
	w := &cohortWaiter{ctx: ctx, cfg: cfg, turn: make(chan cohortTurn, 1)}
	co.waiters = append(co.waiters, w)
	co.mu.Unlock()

	attempts.waited = true
	m.tel.waiting(Write, 1)
	var err error
	select {
	case turn := <-w.turn:
		m.tel.waiting(Write, -1)
		if turn.lease != nil {
			return turn.lease, nil
		}
		return m.leadQueued(ctx, co, cfg, attempts, true, turn.queued)
	case <-ctx.Done():
		err = m.waitError(ctx.Err())
	case <-m.c.closing:
		err = closedError(m.keys.name)
	}
	m.tel.waiting(Write, -1)
	if co.withdraw(w) {
		return nil, err
	}
	// Its turn came as it left: pass it on.
	co.decline(<-w.turn)
	return nil, err
}

// leadQueued acquires in Redis for the cohort, and makes the Lease it gets
// the cohort's hold. queued, when set, is closed once its first attempt
// has reached Redis (or failed): the hold of the run before it waits for
// that before it is released there (prequeue).
func (m *RWMutex) leadQueued(ctx context.Context, co *cohort, cfg acquireConfig, attempts *acquireStats, waited bool, queued chan struct{}) (*Lease, error) {
	cfg.cohort = co
	a := &acquisition{m: m, mode: Write, cfg: cfg, wait: true, o: m.newOwner(), queued: queued}
	if waited {
		// Granted at its first attempt, it still waited: for its cohort's
		// hold to go back to Redis.
		a.firstWoken = wakeCohort
	}
	l, err := a.run(ctx)
	attempts.of(a)
	a.signalQueued()
	co.mu.Lock()
	if err != nil {
		if co.state == cohortHolding {
			co.queuing = false // the run's hold still holds: its end advances
		} else {
			co.advance()
		}
		co.mu.Unlock()
		return nil, err
	}
	if co.state != cohortHolding {
		co.reg.mu.Lock() // co.mu, then reg.mu: nothing takes them the other way
		co.refs++        // the hold's, before anything can end it (ended)
		co.reg.mu.Unlock()
	} // else the run before it, granted away in Redis, has not ended here yet: its reference is this hold's now
	co.queuing = false
	co.state, co.lease = cohortHolding, l
	co.next, co.top, co.passes = l.token+1, l.token+wire.TokenReserve-1, 0
	co.mu.Unlock()
	if _, live := l.left(time.Now()); !live {
		co.ended(l) // it ended before it was the cohort's: the hook missed it
	}
	return l, nil
}

// advance gives the lead to the next waiter, or leaves the cohort idle.
// Call it with co.mu held.
func (co *cohort) advance() {
	co.lease = nil
	if len(co.waiters) == 0 {
		co.state = cohortIdle
		return
	}
	w := co.pop()
	co.state = cohortLeading
	w.turn <- cohortTurn{}
}

// pop removes and returns the first waiter; there must be one. Call it
// with co.mu held.
func (co *cohort) pop() *cohortWaiter {
	w := co.waiters[0]
	co.waiters[0] = nil
	co.waiters = co.waiters[1:]
	return w
}

// withdraw removes w, unless its turn was given; it reports whether it
// was removed.
func (co *cohort) withdraw(w *cohortWaiter) bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	for i, x := range co.waiters {
		if x == w {
			co.waiters = append(co.waiters[:i], co.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// decline passes on a turn whose Lock has gone: the lead to the next
// waiter, a passed Lease by its Unlock, in the background (a pass to the
// next waiter, or a release in Redis). A Client closing ends the Lease
// itself (Shutdown releases it).
func (co *cohort) decline(turn cohortTurn) {
	l := turn.lease
	if l == nil {
		co.mu.Lock()
		if co.state == cohortHolding {
			co.queuing = false // the run's hold still holds: its end advances
		} else {
			co.advance()
		}
		co.mu.Unlock()
		if turn.queued != nil {
			close(turn.queued)
		}
		return
	}
	c := l.m.c
	c.background.run(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, c.unlockTimeout)
		defer cancel()
		_ = l.Unlock(ctx)
	})
}

// ended runs when a Lease of the cohort ends (see Lease.finish): if it is
// the cohort's hold, the hold has ended (unlocked in Redis, lost or
// closed), and the next waiter leads.
func (co *cohort) ended(l *Lease) {
	co.mu.Lock()
	if co.state != cohortHolding || co.lease != l {
		co.mu.Unlock()
		return
	}
	if co.queuing {
		// Its next leader queues in Redis already.
		co.queuing = false
		co.state, co.lease = cohortLeading, nil
	} else {
		co.advance()
	}
	co.mu.Unlock()
	co.reg.done(co) // the hold's
}

// prequeue runs before the hold of l is released in Redis while Locks of
// the cohort wait: the next of them becomes the leader, and its first
// attempt queues it in Redis before the release, so that Redis sees a
// writer waiting throughout (WriterPreferring turns new readers away, and
// the release grants it the write unless another Client's writer queued
// first). It waits for that attempt, within ctx and deadline.
func (co *cohort) prequeue(ctx context.Context, deadline time.Time, l *Lease) {
	if l.m.c.isClosing() {
		return // its waiters are leaving with ErrClosed
	}
	co.mu.Lock()
	if co.state != cohortHolding || co.lease != l || co.queuing || len(co.waiters) == 0 {
		co.mu.Unlock()
		return
	}
	w := co.pop()
	co.queuing = true
	queued := make(chan struct{})
	co.mu.Unlock()
	w.turn <- cohortTurn{queued: queued}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	select {
	case <-queued:
	case <-ctx.Done():
	}
}

// passInline passes l's hold on (see pass) when its owner's lock is free:
// with no Redis call to make, Unlock does it on its caller's goroutine.
// Otherwise the release goes its usual way, and passes there if it can.
func (l *Lease) passInline() bool {
	o := l.own
	select {
	case o.mu <- struct{}{}:
	default:
		return false
	}
	defer o.unlock()
	now := time.Now()
	return l.cohort.pass(l, o.alive(l, now), now)
}

// pass hands the hold of l, being unlocked, to the next waiter, if one
// waits and the bound allows; it reports whether it did, l's release
// then being done. others is what l's owner holds besides l: a hold with
// others (a further hold, a downgrade) is released in Redis. Call it with
// l's owner's lock held.
func (co *cohort) pass(l *Lease, others ownerState, now time.Time) bool {
	if l.mode != Write || others.writes != 0 || len(others.reads) != 0 {
		return false
	}
	c := l.m.c
	left, live := l.left(now)
	if !live || left < c.leaseTime/minPassLeft || c.isClosing() || l.own.lostWrite.Load() {
		return false
	}
	co.mu.Lock()
	if co.state != cohortHolding || co.lease != l || len(co.waiters) == 0 || co.passes >= cohortPasses || co.next > co.top {
		co.mu.Unlock()
		return false
	}
	w := co.pop()
	token := co.next
	co.next++
	co.passes++
	co.lease = nil // no hold's end advances the cohort until nl is its hold
	co.mu.Unlock()

	// l ends (unlocked) before nl exists: once nl's holder has it, it may
	// unlock at once, and must find l no longer among its owner's live
	// holds, or its release would keep a write in Redis for l.
	l.end(nil, lossNone)
	l.own.passed = token // under the owner's lock (see pass's callers)
	cfg := w.cfg
	cfg.cohort = co
	nl := newLease(w.ctx, l.own, Write, cfg, attemptResult{
		reply: acquireReply{granted: true, token: token},
		sent:  now,
		cover: left,
		woken: wakeCohort,
	})
	co.mu.Lock()
	co.lease = nl
	co.mu.Unlock()
	l.m.tel.cohortPassed()
	nl.loseIfGone() // a renewal found the hold gone as it was passed
	if _, live := nl.left(time.Now()); !live {
		co.ended(nl) // it ended before it was the cohort's hold
	}
	w.turn <- cohortTurn{lease: nl}
	return true
}
