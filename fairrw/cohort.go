package fairrw

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// Lock cohorting (Dice, Marathe and Shavit, PPoPP 2012): the Lock calls of
// one Client on one name form a cohort, which takes one place in Redis's
// queue. One of them, the leader, acquires in Redis as any Lock does; the
// others wait here, in arrival order. When the cohort's write hold ends by
// Unlock and another of them waits, the Client passes the hold to it
// without a Redis call: the hold stays the leader's owner's in Redis, which
// keeps renewing it, and the new Lease gets the next fencing token of the
// range Redis reserved with the grant (wire.TokenReserve: a leader asks for
// it when Locks of its cohort wait as it asks, and a grant a release makes
// on a queued writer's behalf always has it).
//
// A run of passes keeps each policy's promise to everyone outside the
// cohort. It yields as soon as the Client knows, or cannot rule out, that
// someone the policy serves next waits: under PhaseFair a waiting reader
// (of this Client: counted as its RLock begins; of another: in the lock's
// waiting readers in Redis) ends it at once, and a writer outside the
// cohort (another Client's, or one of this Client's that queues in Redis
// on its own) is passed at most cohortYield more holds. The Client knows
// who waits in Redis by client tracking: it reads the lock's writer queue
// (and PhaseFair's waiting readers) once, and Redis pushes an invalidation
// at their next change, or the connection's loss does; until it has read
// them again, someone may be waiting. A run that nobody else waits for goes
// on for the tokens its grant reserved (cohortPasses). When the run ends
// and another Lock of the cohort waits, that one becomes the cohort's new
// leader, queued in Redis before the hold is released there (by the
// release itself, or its own first attempt: see prequeue), and the release
// grants the write to the writer queued first (or, under PhaseFair, lets
// the readers waiting in first): Redis sees a writer waiting throughout.
//
// Only plain Locks join: a watchdog lease, a fair policy, no replica
// acknowledgement asked for. Everything else, and every read, goes to Redis
// as before.
type cohort struct {
	reg  *cohorts
	name string
	// queue and waiting are the lock's writer queue and, under PhaseFair,
	// its waiting readers ("" otherwise): the keys the cohort tracks.
	queue, waiting string

	mu    sync.Mutex
	state cohortState
	refs  int    // Lock calls in the cohort, PhaseFair reads under way, and one for a hold; under reg.mu
	lease *Lease // cohortHolding: the hold's current Lease (nil while a pass is made)
	// next and top are the tokens left to hand out (holding); passes counts
	// the passes since the Redis grant, and yielded those made since
	// someone outside the cohort may have been waiting.
	next, top       uint64
	passes, yielded int
	waiters         []*cohortWaiter
	// queuing: the hold's run is over and its next leader, chosen already,
	// queues in Redis before the hold is released there (see prequeue).
	queuing bool

	// readers counts the PhaseFair RLock calls of this Client under way on
	// the name, and unsettled those of them whose first attempt has not
	// been answered yet (cohortReader); settledBell rings when one is (made
	// by join for the first PhaseFair caller, before any read counts in
	// unsettled; nil for a cohort no such read joined).
	readers, unsettled atomic.Int32
	settledBell        chan struct{}
	// What the Client knows of who waits in Redis: the writers queued and
	// (PhaseFair) the readers waiting, as last read, each current until its
	// key's next invalidation; reading is closed when the read under way
	// ends (nil: none). others is the last thing known, kept across runs:
	// someone outside the cohort waited.
	writersQueued, readersWaiting trackedCount
	reading                       chan struct{}
	others                        bool
	blindRuns                     int // Redis grants since the last read, while others
	// listening keeps the name's subscription while the cohort lives,
	// once a run ended with a Lock of it waiting (see prequeue).
	listening *wait.Group
}

// trackedCount is a count read from Redis with client tracking on its key.
type trackedCount struct {
	gen  atomic.Uint64 // the key's invalidations
	seen *countSeen    // the last read, current while its gen is gen; under the cohort's mu
}

// countSeen is one read of a tracked count, made after gen invalidations.
type countSeen struct {
	gen uint64
	n   int64
}

// get returns the count last read, and whether it is current: no
// invalidation of its key came since. Call it with the cohort's mu held.
func (t *trackedCount) get() (int64, bool) {
	s := t.seen
	if s == nil || s.gen != t.gen.Load() {
		return 0, false
	}
	return s.n, true
}

type cohortState uint8

const (
	cohortIdle    cohortState = iota
	cohortLeading             // a Lock of the cohort acquires in Redis
	cohortHolding             // a Lease of the cohort holds the write
)

// cohortPasses is how many passes follow one Redis grant at most: the
// tokens it reserved above its own. Only a run that nobody else waits for
// gets that far.
const cohortPasses = wire.TokenReserve - 1

// cohortYield is how many more holds a run passes on once someone outside
// the cohort may be waiting for the write (known to, or not known not to):
// a bound on the holds of this Client that a writer of another Client waits
// for once its Client has heard of it, and the one that makes a busy lock
// fast across Clients (a Redis handoff serves cohortYield+1 holds).
const cohortYield = 2

var _ = [wire.TokenReserve - 1 - cohortYield]struct{}{} // cohortYield < wire.TokenReserve

// othersRecheck is how often (in Redis grants) a cohort whose runs someone
// outside kept short reads again who waits: whether its runs may grow.
const othersRecheck = 4

// minPassLeft is the least time, in leases, a hold must have left to be
// passed: a hold whose renewals are late goes back to Redis instead.
const minPassLeft = 3

// A cohortWaiter is a Lock waiting in a cohort for its turn.
type cohortWaiter struct {
	ctx  context.Context // the Lock's: the passed Lease's span links to it
	cfg  acquireConfig
	turn chan cohortTurn // buffered: the turn is given without blocking
}

// A cohortTurn is a Lease passed to a waiter, or (lease nil) the lead:
// with successor, as the owner the last hold's release queued in Redis
// (released is that release's error); with queued, closed once the new
// leader's first attempt has reached Redis (see prequeue).
type cohortTurn struct {
	lease     *Lease
	successor *cohortSuccessor
	released  error
	queued    chan struct{}
}

// A cohortSuccessor is a cohort's next leader as the release of the run's
// hold queues it in Redis (see prequeue): its owner, and its place among
// the Client's waiters, which it listens from, made before the release
// was sent.
type cohortSuccessor struct {
	w      *cohortWaiter
	o      *owner
	waiter *wait.Waiter
	sent   time.Time // before the release was first sent
}

// cohorts are a Client's cohorts, by lock name, and by the keys they track.
type cohorts struct {
	mu    sync.Mutex
	m     map[string]*cohort
	byKey map[string]*cohort
	// blind is set when Redis refused the tracked read of a lock's waiters
	// (an ACL without ZCARD or CLIENT CACHING): cohorts never know who
	// waits then, and pass at most cohortYield times per grant.
	blind atomic.Bool
}

// join returns the cohort of the lock k (under PhaseFair if pf), counting
// the caller in until it calls done.
func (r *cohorts) join(k *lockKeys, pf bool) *cohort {
	r.mu.Lock()
	defer r.mu.Unlock()
	co := r.m[k.name]
	if co == nil {
		if r.m == nil {
			r.m = make(map[string]*cohort)
			r.byKey = make(map[string]*cohort)
		}
		co = &cohort{reg: r, name: k.name, queue: k.fair.Queue}
		if pf {
			co.waiting = k.fair.Waiting
			r.byKey[co.waiting] = co
		}
		r.m[k.name] = co
		r.byKey[co.queue] = co
	}
	if pf && co.settledBell == nil {
		// Only PhaseFair reads ring it (cohortReader), each after joining
		// here: a writer-preferring cohort, made and dropped by every
		// uncontended Lock, goes without.
		co.settledBell = make(chan struct{}, 1)
	}
	co.refs++
	return co
}

// done counts a Lock call (or a hold, or a read) out; the last one forgets
// the cohort.
func (r *cohorts) done(co *cohort) {
	r.mu.Lock()
	co.refs--
	last := co.refs == 0
	if last {
		delete(r.m, co.name)
		delete(r.byKey, co.queue)
		if co.waiting != "" {
			delete(r.byKey, co.waiting)
		}
	}
	r.mu.Unlock()
	if last {
		co.mu.Lock()
		g := co.listening
		co.listening = nil
		co.mu.Unlock()
		if g != nil {
			g.Registry().Unlisten(g)
		}
	}
}

// invalidated runs on client tracking's invalidations: a tracked key that
// changed may now have a waiter. nil: any key may have changed (a
// connection closed).
func (r *cohorts) invalidated(messages []rueidis.RedisMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if messages == nil {
		for _, co := range r.m {
			co.writersQueued.gen.Add(1)
			co.readersWaiting.gen.Add(1)
		}
		return
	}
	for _, msg := range messages {
		key, err := msg.ToString()
		if err != nil {
			continue
		}
		switch co := r.byKey[key]; {
		case co == nil:
		case key == co.queue:
			co.writersQueued.gen.Add(1)
		default:
			co.readersWaiting.gen.Add(1)
		}
	}
}

// A cohortReader is a PhaseFair RLock of this Client under way on the
// cohort's name (readerEnters): any of them ends a run at its next Unlock.
// Until it is settled (its first attempt answered: it waits among the
// lock's readers in Redis, or entered), the run's release waits for it
// (awaitReaders), so that the release lets it in ahead of the cohort's
// next leader, as PhaseFair says.
type cohortReader struct {
	co      *cohort
	settled atomic.Bool
}

// settle records that the read's first attempt was answered, or that its
// Client's read leader's stands for it.
func (rd *cohortReader) settle() {
	if rd == nil || !rd.settled.CompareAndSwap(false, true) {
		return
	}
	rd.co.unsettled.Add(-1)
	select {
	case rd.co.settledBell <- struct{}{}:
	default:
	}
}

// leave counts the read out, once it returned.
func (rd *cohortReader) leave() {
	if rd == nil {
		return
	}
	rd.settle()
	rd.co.readers.Add(-1)
	rd.co.reg.done(rd.co)
}

// awaitReaders waits, within ctx and deadline, until every PhaseFair read
// of this Client under way on the name has had its first attempt answered
// (see cohortReader), so that the release about to be sent admits it.
func (co *cohort) awaitReaders(ctx context.Context, deadline time.Time) {
	if co.unsettled.Load() == 0 {
		return
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	for co.unsettled.Load() > 0 {
		select {
		case <-co.settledBell:
		case <-ctx.Done():
			return
		}
	}
}

// reserve is how many fencing tokens the cohort's leader asks its grant to
// reserve: all it may pass on when Locks of the cohort wait already, else
// its own alone, so that an uncontended Lock takes no range from the
// name's tokens (a range left unused runs the tokens ahead of the clock:
// see wire.TokenReserve).
func (co *cohort) reserve() int {
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.waiters) > 0 {
		return wire.TokenReserve
	}
	return 1
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
		if s := turn.successor; s != nil {
			// Queued, or granted, in Redis for a Lock that has gone: give
			// it back (Close and Shutdown end what it still holds).
			s.waiter.Registry().Leave(s.waiter)
			if turn.released != nil {
				s.o.sent = true // a copy of that release may still queue it
			}
			s.o.m.giveBack(s.o, Write, s.w.cfg.lease)
		}
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
	c.backgroundTasks().run(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, c.settings().unlockTimeout)
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
// the cohort wait: the next of them becomes the leader, and is queued in
// Redis before the release, so that Redis sees a writer waiting throughout
// (WriterPreferring turns new readers away, and the release grants it the
// write unless another writer queued first, or, under PhaseFair, readers
// wait). Once the Client listens to the name (a busy cohort keeps its
// subscription), the release itself queues it: prequeue returns it as the
// release's successor, which the release hands its turn (queuedBy), one
// round trip for both. Until then the new leader's first attempt queues
// it, and prequeue waits for that attempt, within ctx and deadline.
func (co *cohort) prequeue(ctx context.Context, deadline time.Time, l *Lease) *cohortSuccessor {
	m := l.m
	if m.c.isClosing() {
		return nil // its waiters are leaving with ErrClosed
	}
	co.mu.Lock()
	if co.state != cohortHolding || co.lease != l || co.queuing || len(co.waiters) == 0 {
		co.mu.Unlock()
		return nil
	}
	w := co.pop()
	co.queuing = true
	if co.listening == nil {
		// A busy cohort: its leaders queue in Redis again and again, and
		// listen from their first attempt once the subscription stays.
		co.listening = m.c.waiters().Listen(&m.keys.Keys)
	}
	co.mu.Unlock()
	o := m.newOwner()
	if waiter := m.c.waiters().JoinListening(&m.keys.Keys, waitMode(Write), o.id); waiter != nil {
		// Queued by the release (or by a try of it whose answer was lost):
		// a Lock that gives up withdraws the entry.
		o.queued = true
		return &cohortSuccessor{w: w, o: o, waiter: waiter, sent: time.Now()}
	}
	queued := make(chan struct{})
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
	return nil
}

// queuedBy hands the successor its turn once the release that queued it
// was answered (err nil) or failed; a nil successor does nothing.
func (s *cohortSuccessor) queuedBy(err error) {
	if s != nil {
		s.w.turn <- cohortTurn{successor: s, released: err}
	}
}

// pass hands the hold of l, being unlocked, to the next waiter, if one
// waits and the run may go on (mayPass); it reports whether it did, l's
// release then being done. others is what l's owner holds besides l: a
// hold with others (a further hold, a downgrade) is released in Redis.
// With waits, a pass that needs a read of who waits in Redis waits for it
// within ctx and deadline; without, it is not made. Call it with l's
// owner's lock held.
func (co *cohort) pass(ctx context.Context, deadline time.Time, waits bool, l *Lease, others ownerState, now time.Time) bool {
	if l.mode != Write || others.writes != 0 || len(others.reads) != 0 {
		return false
	}
	c := l.m.c
	left, live := l.left(now)
	if !live || left < c.settings().leaseTime/minPassLeft || c.isClosing() || l.own.lostWrite.Load() {
		return false
	}
	co.mu.Lock()
	for read := false; ; read = true {
		if co.state != cohortHolding || co.lease != l || len(co.waiters) == 0 || co.passes >= cohortPasses || co.next > co.top {
			co.mu.Unlock()
			return false
		}
		v := co.mayPass(l.m)
		if v == passNow {
			break
		}
		reading := co.reading
		co.mu.Unlock()
		// One read at most: a read that failed leaves the run as unsure as
		// it was, and the write goes back to Redis.
		if v == passEnd || read || reading == nil || !waits || !awaitRead(ctx, deadline, reading) {
			return false
		}
		co.mu.Lock()
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
		woken: wait.Cohort,
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

// passVerdict is what a run may do at an Unlock (cohort.mayPass).
type passVerdict uint8

const (
	passNow       passVerdict = iota // pass the hold on
	passEnd                          // end the run: the write goes back to Redis
	passAfterRead                    // ask again once the read under way says who waits
)

// mayPass says whether the run may pass the hold on, as far as everyone
// outside the cohort goes, counting the pass it allows (see cohort): a
// PhaseFair reader known to wait, or not known not to, ends the run; a
// writer outside the cohort who waits, or may, gets at most cohortYield
// more holds passed before the write goes back to Redis; a run that
// nobody else waits for goes on.
// When the Client does not know who waits and the run has passed what it
// may meanwhile, it waits for a read (passAfterRead), unless the last it
// knew was that someone did. Call it with co.mu held.
func (co *cohort) mayPass(m *RWMutex) passVerdict {
	pf := co.waiting != ""
	if pf && co.readers.Load() > 0 {
		return passEnd // a reader of this Client: its read phase comes first
	}
	writers, wKnown := co.writersQueued.get()
	readers, rKnown := int64(0), true
	if pf {
		readers, rKnown = co.readersWaiting.get()
	}
	switch {
	case rKnown && readers > 0:
		co.others = true
		return passEnd
	case wKnown && rKnown && writers == 0:
		co.others, co.yielded = false, 0
		return passNow
	case wKnown && writers > 0:
		co.others = true
	}
	limit := cohortYield
	if !rKnown {
		// A PhaseFair reader may wait unbeknown: no pass before a read
		// says none does, so that a reader waits through no hold of the
		// run after the one it found.
		limit = 0
	}
	if !wKnown || !rKnown {
		switch {
		case co.reg.blind.Load() || !m.c.tracks():
			co.others = true // never known: someone may always wait
		case !co.others:
			// Whether the run may go on depends on the read; when someone
			// waited at the last read, it ends anyway (the grants read
			// again now and then: see leadQueued).
			co.refresh(m)
		}
	}
	if co.yielded < limit {
		co.yielded++
		return passNow
	}
	if (wKnown && rKnown) || co.others {
		return passEnd
	}
	return passAfterRead
}

// knowsWaiters reports whether what the cohort read of who waits in Redis
// is current. Call it with co.mu held.
func (co *cohort) knowsWaiters() bool {
	_, known := co.writersQueued.get()
	if co.waiting != "" {
		_, r := co.readersWaiting.get()
		known = known && r
	}
	return known
}

// refresh starts a read of who waits on the lock in Redis, unless one is
// under way, or the Client cannot know (no client tracking, or Redis
// refused the read): its end closes co.reading. Call it with co.mu held.
func (co *cohort) refresh(m *RWMutex) {
	c := m.c
	if co.reading != nil || !c.tracks() || co.reg.blind.Load() {
		return
	}
	done := make(chan struct{})
	// The gens before the read: an invalidation during it makes it stale.
	wgen, rgen := co.writersQueued.gen.Load(), co.readersWaiting.gen.Load()
	// Run by the Client's tasks, not as background work: Shutdown need
	// not wait for a read that only tells a run whether to go on.
	started := c.backgroundTasks().start(taskFunc(func(ctx context.Context) {
		writers, readers, err := m.waitersIn(ctx, co.waiting != "")
		co.mu.Lock()
		if err == nil {
			co.writersQueued.seen = &countSeen{gen: wgen, n: writers}
			co.readersWaiting.seen = &countSeen{gen: rgen, n: readers}
		}
		co.reading = nil
		close(done)
		co.mu.Unlock()
	}), false)
	if started {
		co.reading = done
	}
}

// awaitRead waits for a read of who waits (reading) to end, within ctx
// and deadline (zero: ctx alone); it reports whether it did.
func awaitRead(ctx context.Context, deadline time.Time, reading <-chan struct{}) bool {
	if reading == nil {
		return true
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	select {
	case <-reading:
		return true
	case <-ctx.Done():
		return false
	}
}
