package fairrw

import (
	"context"
	"sync"
	"sync/atomic"

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

// A leadRun is a read of the name acquiring in Redis for its Client (the
// leader), which the reads that come meanwhile wait for rather than each
// go to Redis. done closes when its acquire ends; o and token are then its
// grant's (o nil: not granted).
//
// The run's place in Redis is every waiting read's: a read that waited for
// it came before whatever queued there since, and the policy orders it so
// (PhaseFair grants it before writers that came later). So when the
// leader's caller leaves (its ctx ended) while reads still wait, its
// acquisition is kept (kept, handed): the first of them to see it carries
// it on as the run's leader, as the same owner in the same place; if they
// all leave first, the last one gives it up. And when the leader is
// granted, a Lease on its hold is made for each read that waits (leases)
// before its caller has its own, so that no Unlock of the leader's can
// release the hold in Redis before they join it: a leader that unlocked at
// once sent the reads that waited for it back to Redis, behind the writers
// that queued after them (and, under PhaseFair, through their writes).
type leadRun struct {
	done  chan struct{}
	o     *owner
	token uint64
	// waiting counts the reads that wait for the run, its leader not
	// counted. kept is an acquisition its leader left to them; handed is
	// closed when one is kept, and replaced when it is taken.
	waiting int
	kept    *acquisition
	handed  chan struct{}
	// leases are the Leases made on the granted leader's hold for the reads
	// that wait, one each (set as done closes): each takes one (claim), or
	// unlocks one if it leaves instead (left).
	leases []*Lease
}

// keeper is the keep of an acquisition that leads run (see
// acquisition.keep): it hands the acquisition to the reads that wait, if
// any, after copying what it did so far into mine, and setting kept. It
// runs in the leader's goroutine, whose own variables mine and kept are:
// not the caller's stats, which would move its trace to the heap.
func (r *readShares) keeper(run *leadRun, mine *acquireStats, kept *bool) func(*acquisition) bool {
	return func(a *acquisition) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if run.waiting == 0 {
			return false
		}
		a.addTo(mine)
		a.attempts, a.waited = 0, false
		run.kept, *kept = a, true
		close(run.handed)
		return true
	}
}

// take returns the acquisition run's leader left, for the read that
// carries it on, or nil if another read took it.
func (r *readShares) take(run *leadRun) *acquisition {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := run.kept
	if a != nil {
		run.kept, run.handed = nil, make(chan struct{})
		run.waiting--
	}
	return a
}

// left counts out a read that stopped waiting for run (its ctx ended, or
// Close). The last one gives up an acquisition that nobody carried on,
// which ends the run. One whose run was granted meanwhile unlocks the
// Lease made for it there (with ctx, ended: at most the clean-up grace).
func (r *readShares) left(ctx context.Context, s *readShare, run *leadRun) {
	r.mu.Lock()
	run.waiting--
	if mine := run.pop(); mine != nil {
		r.mu.Unlock()
		_ = mine.Unlock(ctx)
		return
	}
	a := run.kept
	if run.waiting > 0 || a == nil {
		r.mu.Unlock()
		return
	}
	run.kept = nil
	if s.lead == run {
		s.lead = nil
	}
	close(run.done)
	r.mu.Unlock()
	a.abandon()
}

// pop takes one of run.leases, if any is left. r.mu is held.
func (run *leadRun) pop() *Lease {
	n := len(run.leases)
	if n == 0 {
		return nil
	}
	l := run.leases[n-1]
	run.leases[n-1] = nil
	run.leases = run.leases[:n-1]
	return l
}

// claim returns the Lease that run's leader made for a read that waited
// for it (see leadRun), or nil if none is left for it, or the one it took
// has ended meanwhile (a renewal found the hold gone, or it ran out).
func (r *readShares) claim(run *leadRun) *Lease {
	r.mu.Lock()
	l := run.pop()
	r.mu.Unlock()
	if l == nil {
		return nil
	}
	// Its read holds it from now on, unless it ended first: then it ended
	// as a spare (Lease.finish), and the read makes its way without it.
	l.mu.Lock()
	held := l.state != leaseEnded
	if held {
		l.spare.Store(false)
	}
	l.mu.Unlock()
	if !held {
		return nil
	}
	return l
}

// formedBy records the end of a read's acquire in Redis for s: its Lease,
// if granted, becomes the shared hold (the latest grant has the longest
// lease; a hold shared before keeps its Leases); a leader's end wakes the
// reads that waited for it (run). A granted leader's run needs a Lease on
// its hold for each of them (made): while more wait than were made, and
// final is not set, it changes nothing and returns how many more to make.
// Otherwise it returns the Leases made for reads that left meanwhile, for
// the caller to unlock.
func (r *readShares) formedBy(s *readShare, l *Lease, run *leadRun, made []*Lease, final bool) (need int, surplus []*Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run != nil && l != nil && !final && run.waiting > len(made) {
		return run.waiting - len(made), nil
	}
	if l != nil {
		s.o, s.token = l.own, l.token
	}
	if run != nil {
		if l != nil {
			run.o, run.token = l.own, l.token
			n := min(run.waiting, len(made))
			run.leases, surplus = made[:n], made[n:]
		}
		if s.lead == run {
			s.lead = nil
		}
		close(run.done)
	}
	return 0, surplus
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
