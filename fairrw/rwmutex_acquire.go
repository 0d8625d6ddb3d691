package fairrw

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// acquire takes a first hold of mode for a new owner (see acquisition).
func (m *RWMutex) acquire(ctx context.Context, mode Mode, wait bool, opts []AcquireOption, stats *acquireStats) (*Lease, error) {
	cfg, err := m.prepare(mode, opts)
	if err != nil {
		return nil, err
	}
	if err := m.c.enter(); err != nil {
		return nil, closedError(m.keys.name)
	}
	defer m.c.leave()
	if err := m.c.await(ctx, m.keys.name); err != nil {
		return nil, err
	}
	if co := m.cohortFor(mode, wait, cfg); co != nil {
		return m.lockInCohort(ctx, co, cfg, stats)
	}
	var rd *cohortReader
	if mode == Read {
		// A PhaseFair read waits through no run of its Client's cohort.
		rd = m.readerEnters(wait)
		defer rd.leave()
	}
	if m.sharesReads(mode, cfg) {
		return m.acquireShared(ctx, cfg, wait, stats, rd)
	}
	a := &acquisition{m: m, mode: mode, cfg: cfg, wait: wait, o: m.newOwner(), reader: rd}
	l, err := a.run(ctx)
	// Counted here, not through the pointer as they are made: kept by the
	// acquisition, it would move the caller's trace to the heap.
	a.addTo(stats)
	return l, err
}

// cohortFor returns the cohort a Lock with cfg joins, or nil when it goes
// to Redis on its own.
func (m *RWMutex) cohortFor(mode Mode, wait bool, cfg acquireConfig) *cohort {
	c := m.c
	if !c.settings().cohorting || mode != Write || !wait || !m.policy.queued() || cfg.explicit || cfg.notify || cfg.unreachableFails || c.settings().syncReplicas > 0 {
		return nil
	}
	return c.writeCohorts().join(&m.keys, m.policy.name() == phaseFairName)
}

// lockInCohort is Lock in co: it leads, or waits for its turn.
func (m *RWMutex) lockInCohort(ctx context.Context, co *cohort, cfg acquireConfig, attempts *acquireStats) (*Lease, error) {
	defer co.reg.done(co)
	co.mu.Lock()
	if co.state == cohortIdle {
		co.state = cohortLeading
		co.mu.Unlock()
		return m.leadQueued(ctx, co, cfg, attempts, false, cohortTurn{})
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
		return m.leadQueued(ctx, co, cfg, attempts, true, turn)
	case <-ctx.Done():
		err = m.waitError(ctx.Err())
	case <-m.c.closingDone():
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
// the cohort's hold. Given the lead by turn, it either waits as the
// successor the last hold's release queued (turn.successor), or acquires
// as a new owner; then turn.queued, when set, is closed once its first
// attempt has reached Redis (or failed): the hold of the run before it
// waits for that before it is released there (prequeue).
func (m *RWMutex) leadQueued(ctx context.Context, co *cohort, cfg acquireConfig, attempts *acquireStats, waited bool, turn cohortTurn) (*Lease, error) {
	cfg.cohort = co
	var l *Lease
	var err error
	if s := turn.successor; s != nil {
		a := &acquisition{m: m, mode: Write, cfg: cfg, wait: true, o: s.o, w: s.waiter, refused: s.sent, firstWoken: wait.Cohort,
			reserve: wire.TokenReserve}
		l, err = a.runQueued(ctx, turn.released)
		a.addTo(attempts)
	} else {
		a := &acquisition{m: m, mode: Write, cfg: cfg, wait: true, o: m.newOwner(), queued: turn.queued, reserve: co.reserve()}
		if waited {
			// Granted at its first attempt, it still waited: for its
			// cohort's hold to go back to Redis.
			a.firstWoken = wait.Cohort
		}
		l, err = a.run(ctx)
		a.addTo(attempts)
		a.signalQueued()
	}
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
	// The tokens its grant reserved (none above its own if it asked for
	// none: no pass before the next grant in Redis).
	co.next, co.top, co.passes, co.yielded = l.token+1, l.token+uint64(max(l.own.reserve, 1))-1, 0, 0
	if co.next <= co.top && len(co.waiters) > 0 && !co.knowsWaiters() {
		// The grant changed the queue: learn who waits behind it while
		// the leader holds, before its Unlock asks whether to pass; after
		// runs that someone outside waited for, only every othersRecheck
		// grants (the runs end at cohortYield passes anyway). A leader
		// with no tokens to pass, or none to pass to, asks nothing: an
		// uncontended Lock costs no read.
		if co.blindRuns++; !co.others || co.blindRuns >= othersRecheck {
			co.blindRuns = 0
			co.refresh(m)
		}
	}
	co.mu.Unlock()
	if _, live := l.left(time.Now()); !live {
		co.ended(l) // it ended before it was the cohort's: the hook missed it
	}
	return l, nil
}

// readerEnters counts a PhaseFair RLock of this Client in, for as long as
// it is under way (until leave). It returns nil (whose methods do nothing)
// when cohorts are off, for a TryRLock, or under another policy.
func (m *RWMutex) readerEnters(wait bool) *cohortReader {
	if !wait || !m.c.settings().cohorting || !m.policy.queued() || m.policy.name() != phaseFairName {
		return nil
	}
	co := m.c.writeCohorts().join(&m.keys, true)
	co.readers.Add(1)
	co.unsettled.Add(1)
	return &cohortReader{co: co}
}

// sharesReads reports whether an acquire of mode with cfg may share a read
// hold (see readShares).
func (m *RWMutex) sharesReads(mode Mode, cfg acquireConfig) bool {
	c := m.c
	return mode == Read && c.sharesReads() && !c.readShares().off.Load() && m.policy.queued() && !cfg.explicit && !cfg.notify && !cfg.unreachableFails && c.settings().syncReplicas == 0
}

// acquireShared is RLock (wait) or TryRLock for a read that may share: it
// joins the name's shared hold, or waits for the read that is making one,
// or acquires in Redis, and its grant becomes the shared hold.
// rd, when set, is the read as its cohort counts it (see cohortReader).
func (m *RWMutex) acquireShared(ctx context.Context, cfg acquireConfig, wait bool, attempts *acquireStats, rd *cohortReader) (*Lease, error) {
	r := m.c.readShares()
	s := r.enter(&m.keys)
	defer r.done(s)
	cfg.share = s
	var admitted *leadRun
	for {
		l, lead, follow := m.joinShare(ctx, cfg, wait, admitted)
		if l != nil {
			return l, nil
		}
		if follow == nil {
			a := &acquisition{m: m, mode: Read, cfg: cfg, wait: wait, o: m.newOwner(), reader: rd}
			return m.leadShared(ctx, s, lead, a, a.run, attempts)
		}
		attempts.waited = true
		// Its leader's attempt stands for it in Redis.
		rd.settle()
		m.tel.waiting(Read, 1)
		for admitted = nil; admitted == nil; {
			r.mu.Lock()
			handed := follow.handed
			r.mu.Unlock()
			select {
			case <-follow.done:
				m.tel.waiting(Read, -1)
				admitted = follow
			case <-handed:
				a := r.take(follow)
				if a == nil {
					continue // another read carries it on
				}
				m.tel.waiting(Read, -1)
				return m.leadShared(ctx, s, follow, a, a.resume, attempts)
			case <-ctx.Done():
				m.tel.waiting(Read, -1)
				r.left(ctx, s, follow)
				return nil, m.waitError(ctx.Err())
			case <-m.c.closingDone():
				m.tel.waiting(Read, -1)
				r.left(ctx, s, follow)
				return nil, closedError(m.keys.name)
			}
		}
	}
}

// leadShared runs a, a read's acquisition in Redis (by step: a.run, or
// a.resume for one its run's last leader left), as run's leader if run is
// set: its grant becomes the shared hold, and its end ends the run unless
// the reads that wait for it carry it on (leadRun).
func (m *RWMutex) leadShared(ctx context.Context, s *readShare, run *leadRun, a *acquisition, step func(context.Context) (*Lease, error), attempts *acquireStats) (*Lease, error) {
	r := m.c.readShares()
	var mine acquireStats
	kept := false
	if run != nil {
		a.keep = r.keeper(run, &mine, &kept)
	}
	l, err := step(ctx)
	if kept {
		attempts.attempts += mine.attempts
		attempts.waited = attempts.waited || mine.waited
		return nil, err // the run goes on
	}
	a.addTo(attempts)
	m.formRun(ctx, s, l, run, a.cfg)
	return l, err
}

// formRun records the end of a read's acquire in Redis for s and its run
// (see readShares.formedBy): when l, the run's leader's, was granted, it
// first makes a Lease on l's hold for each read that waits for it (cfg:
// the leader's, the same for every plain read), before l's caller can
// unlock l. A Lease it cannot make (the hold went, ctx ended) leaves that
// read to share the hold itself, or to acquire in Redis, as before.
func (m *RWMutex) formRun(ctx context.Context, s *readShare, l *Lease, run *leadRun, cfg acquireConfig) {
	r := m.c.readShares()
	var made []*Lease
	final := run == nil || l == nil
	for {
		need, surplus := r.formedBy(s, l, run, made, final)
		if need == 0 {
			for _, x := range surplus {
				_ = x.Unlock(ctx)
			}
			return
		}
		for range need {
			x := m.shareOf(ctx, l.own, l.token, cfg, true)
			if x == nil {
				final = true
				break
			}
			made = append(made, x)
		}
	}
}

// joinShare returns a Lease on the name's shared read hold (cfg.share), or
// else what to do: lead (acquire in Redis as the leader of the run it
// returns), follow (wait for that run's leader), or neither (acquire in
// Redis on its own). A read shares when no writer is known to wait; a read
// that waited for a leader (admitted) shares that leader's hold whatever
// queued since: it came when no writer was known to wait, and it waited as
// the leader waited in Redis, which granted the leader as the policy says.
// Only reads that wait lead or follow. A hold with less than a third of a
// lease left is not shared, nor one that was released or found gone.
func (m *RWMutex) joinShare(ctx context.Context, cfg acquireConfig, wait bool, admitted *leadRun) (l *Lease, lead, follow *leadRun) {
	c, s := m.c, cfg.share
	r := c.readShares()
	if admitted != nil && admitted.o != nil { // set before done closed
		if l := r.claim(admitted); l != nil {
			return l, nil, nil
		}
		if l := m.shareOf(ctx, admitted.o, admitted.token, cfg, false); l != nil {
			return l, nil, nil
		}
	}
	r.mu.Lock()
	o, token, known, queued, gen := s.o, s.token, s.known, s.queued, s.gen
	r.mu.Unlock()
	if !known {
		q, err := m.queueExists(ctx)
		if err != nil {
			return nil, nil, nil
		}
		r.mu.Lock()
		if s.gen == gen {
			s.known, s.queued = true, q
		}
		r.mu.Unlock()
		queued = q
	}
	if queued {
		return nil, nil, nil // a writer waits: Redis decides
	}
	if o != nil {
		if l := m.shareOf(ctx, o, token, cfg, false); l != nil {
			return l, nil, nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.o == o {
		s.o = nil // not to be shared any more
	}
	switch {
	case s.o != nil && ctx.Err() == nil:
		// A newer hold came meanwhile: share it, or try as if it had not.
		r.mu.Unlock()
		l, lead, follow = m.joinShare(ctx, cfg, wait, nil)
		r.mu.Lock()
		return l, lead, follow
	case !wait:
		return nil, nil, nil
	case s.lead != nil:
		s.lead.waiting++
		return nil, nil, s.lead
	default:
		s.lead = &leadRun{done: make(chan struct{}), handed: make(chan struct{})}
		return nil, s.lead, nil
	}
}

// shareOf returns a new Lease on o's read hold, or nil if o holds no read
// to share (released, found gone by a renewal, a write besides, or less
// than a third of a lease left), or ctx ended first. spare: the Lease is
// made for a read that waits for its run's leader (Lease.spare).
func (m *RWMutex) shareOf(ctx context.Context, o *owner, token uint64, cfg acquireConfig, spare bool) *Lease {
	c := m.c
	// Another read joining, or leaving, holds the owner's lock for a
	// moment; a release in Redis holds it longer, and leaves the owner
	// unshared.
	if o.lock(ctx) != nil {
		return nil
	}
	defer o.unlock()
	now := time.Now()
	st := o.alive(nil, now)
	if o.unshared || o.lostRead.Load() || st.writes != 0 || len(st.reads) == 0 || st.reads[0] < c.settings().leaseTime/minPassLeft || c.isClosing() {
		return nil
	}
	// The share lasts its own lease, as a grant from Redis would, at most
	// what Redis keeps of the hold: a further hold of the owner's with a
	// longer lease of its own keeps the hold longer, and a watchdog share
	// must not report a Deadline past its lease time (it is renewed with
	// the owner's hold), nor a share WithLease one past its lease.
	l := newLease(ctx, o, Read, cfg, attemptResult{
		reply: acquireReply{granted: true, token: token},
		sent:  now,
		cover: min(st.reads[0], cfg.lease),
		woken: wait.Share,
		spare: spare,
	})
	if l.loseIfGone() {
		return nil
	}
	return l
}

// queueExists reads whether the lock's writer queue has entries (ZCARD:
// rueidis caches no EXISTS), arming client tracking on it: its next change
// pushes an invalidation (invalidated).
func (m *RWMutex) queueExists(ctx context.Context) (bool, error) {
	c := m.c
	ctx, cancel := context.WithTimeout(ctx, c.retryWindow())
	defer cancel()
	n, err := bounded(c, ctx, func(ctx context.Context) (int64, error) {
		return c.redis().DoCache(ctx, c.redis().B().Zcard().Key(m.keys.fair.Queue).Cache().Pin(), c.settings().leaseTime).AsInt64()
	})
	if _, refused := rueidis.IsRedisErr(err); refused {
		c.readShares().off.Store(true)
	}
	return n != 0, err
}
