package fairrw

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Local read sharing: the plain reads of one Client on one name share the
// read hold of the latest one that Redis granted, while they overlap and
// no writer waits in Redis. A read that shares gets its own Lease under
// that hold's owner, with no Redis call; its Unlock, while another Lease of
// the owner still holds, ends it with no Redis call either; the owner's
// last Unlock releases the hold in Redis. The watchdog renews the hold as
// one, and a hold lost in Redis ends every Lease on it.
//
// Whether a writer waits is whether the lock's queue key has entries, read
// with client tracking: a writer queuing anywhere (another Client, or this
// one) changes the key, and Redis pushes an invalidation at once; until
// the key is read again no read shares. So WriterPreferring and PhaseFair
// still turn new readers away when a writer waits: a read that finds one
// queued goes to Redis, and waits there as the policy says. The gap is one
// push: a read may share in the moment between a writer queuing and this
// Client hearing of it, as a read sent to Redis in that moment is granted.
// Never after the Client was told of the writer another way: its calls and
// the pushes share one connection (client.go), on which Redis sends the
// push before the answer to any call that runs after the change.
//
// Only plain reads share (a watchdog lease, a fair policy, no replica
// acknowledgement, a Client whose rueidis client fairrw made, so that
// invalidations reach it); WithCohorts(false) turns sharing off too.
type readShares struct {
	// off is set when Redis refused the tracked read of a queue (an ACL
	// without ZCARD or CLIENT CACHING): reads share no more, rather than
	// pay a refused call each.
	off     atomic.Bool
	mu      sync.Mutex
	byName  map[string]*readShare
	byQueue map[string]*readShare // the same shares, by their queue key
}

// A readShare is one name's shared read hold and what the Client knows of
// the name's writer queue. Its fields are guarded by readShares.mu.
type readShare struct {
	name, queue string
	// refs counts the reads of the name under way and the Leases that
	// shared or may share a hold of it: the last one forgets the share.
	refs  int
	o     *owner // the owner whose read hold is shared; nil: none
	token uint64 // its read's fencing token: every Lease on it has it
	// lead is the run of the read of the name acquiring in Redis to make
	// a new shared hold, if one does (see leadRun).
	lead *leadRun
	// gen counts the invalidations of the queue key; known says that
	// queued is current: no invalidation came since it was read.
	gen    uint64
	known  bool
	queued bool
}

// enter returns the name's share, counting a read in until done.
func (r *readShares) enter(k *lockKeys) *readShare {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byName[k.name]
	if s == nil {
		if r.byName == nil {
			r.byName = make(map[string]*readShare)
			r.byQueue = make(map[string]*readShare)
		}
		s = &readShare{name: k.name, queue: k.fair.Queue}
		r.byName[s.name] = s
		r.byQueue[s.queue] = s
	}
	s.refs++
	return s
}

// done counts a read (or a Lease, at its end) out.
func (r *readShares) done(s *readShare) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.refs--
	if s.refs == 0 {
		delete(r.byName, s.name)
		delete(r.byQueue, s.queue)
	}
}

// hold counts a new Lease on s in (see newLease).
func (r *readShares) hold(s *readShare) {
	r.mu.Lock()
	s.refs++
	r.mu.Unlock()
}

// sharesReads reports whether an acquire of mode with cfg may share a read
// hold (see readShares).
func (m *RWMutex) sharesReads(mode Mode, cfg acquireConfig) bool {
	c := m.c
	return mode == Read && c.sharing && !c.shares.off.Load() && m.policy.queued() && !cfg.explicit && !cfg.notify && !cfg.unreachableFails && c.syncReplicas == 0
}

// acquireShared is RLock (wait) or TryRLock for a read that may share: it
// joins the name's shared hold, or waits for the read that is making one,
// or acquires in Redis, and its grant becomes the shared hold.
// rd, when set, is the read as its cohort counts it (see cohortReader).
func (m *RWMutex) acquireShared(ctx context.Context, cfg acquireConfig, wait bool, attempts *acquireStats, rd *cohortReader) (*Lease, error) {
	r := &m.c.shares
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
			l, err := a.run(ctx)
			attempts.of(a)
			r.formedBy(s, l, lead)
			return l, err
		}
		attempts.waited = true
		// Its leader's attempt stands for it in Redis.
		rd.settle()
		m.tel.waiting(Read, 1)
		select {
		case <-follow.done:
			m.tel.waiting(Read, -1)
			admitted = follow
		case <-ctx.Done():
			m.tel.waiting(Read, -1)
			return nil, m.waitError(ctx.Err())
		case <-m.c.closing:
			m.tel.waiting(Read, -1)
			return nil, closedError(m.keys.name)
		}
	}
}

// A leadRun is a read of the name acquiring in Redis for its Client (the
// leader), which the reads that come meanwhile wait for rather than each
// go to Redis. done closes when its acquire ends; o and token are then its
// grant's (o nil: not granted).
type leadRun struct {
	done  chan struct{}
	o     *owner
	token uint64
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
	r := &c.shares
	if admitted != nil && admitted.o != nil { // set before done closed
		if l := m.shareOf(ctx, admitted.o, admitted.token, cfg); l != nil {
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
		if l := m.shareOf(ctx, o, token, cfg); l != nil {
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
		return nil, nil, s.lead
	default:
		s.lead = &leadRun{done: make(chan struct{})}
		return nil, s.lead, nil
	}
}

// shareOf returns a new Lease on o's read hold, or nil if o holds no read
// to share (released, found gone by a renewal, a write besides, or less
// than a third of a lease left), or ctx ended first.
func (m *RWMutex) shareOf(ctx context.Context, o *owner, token uint64, cfg acquireConfig) *Lease {
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
	if o.unshared || o.lostRead.Load() || st.writes != 0 || len(st.reads) == 0 || st.reads[0] < c.leaseTime/minPassLeft || c.isClosing() {
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
		woken: wakeShare,
	})
	if l.loseIfGone() {
		return nil
	}
	return l
}

// formedBy records the end of a read's acquire in Redis for s: its Lease,
// if granted, becomes the shared hold (the latest grant has the longest
// lease; a hold shared before keeps its Leases); a leader's end wakes the
// reads that waited for it (run).
func (r *readShares) formedBy(s *readShare, l *Lease, run *leadRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l != nil {
		s.o, s.token = l.own, l.token
	}
	if run != nil {
		if l != nil {
			run.o, run.token = l.own, l.token
		}
		s.lead = nil
		close(run.done)
	}
}

// queueExists reads whether the lock's writer queue has entries (ZCARD:
// rueidis caches no EXISTS), arming client tracking on it: its next change
// pushes an invalidation (invalidated).
func (m *RWMutex) queueExists(ctx context.Context) (bool, error) {
	c := m.c
	ctx, cancel := context.WithTimeout(ctx, c.retryWindow())
	defer cancel()
	n, err := bounded(c, ctx, func(ctx context.Context) (int64, error) {
		return c.rdb.DoCache(ctx, c.rdb.B().Zcard().Key(m.keys.fair.Queue).Cache().Pin(), c.leaseTime).AsInt64()
	})
	if _, refused := rueidis.IsRedisErr(err); refused {
		c.shares.off.Store(true)
	}
	return n != 0, err
}

// invalidated runs on client tracking's invalidations: a queue key that
// changed may now hold a writer. nil: any key may have changed.
func (r *readShares) invalidated(messages []rueidis.RedisMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if messages == nil {
		for _, s := range r.byName {
			s.gen++
			s.known = false
		}
		return
	}
	for _, msg := range messages {
		key, err := msg.ToString()
		if err != nil {
			continue
		}
		if s := r.byQueue[key]; s != nil {
			s.gen++
			s.known = false
		}
	}
}
