package fairrw

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// An owner is one lock owner in Redis, "<client uuid>:<n>" (Redisson's
// thread): what one Lock, RLock, TryLock or TryRLock call acquires, and
// every further hold taken from its Leases (Lease.Lock, Lease.RLock). Each
// acquire on a handle is a new owner, so goroutines that share a handle
// exclude each other as sync.RWMutex's do.
//
// Redis counts an owner's holds per mode and keeps one deadline per mode
// (the Redisson format fixes that: a field with a count). The owner knows
// each hold's own deadline, so every change it makes in Redis (a further
// hold, a release) sets the count to the holds still alive and the deadline
// to the longest of them: releasing one hold never shortens another live
// one, and a hold whose lease ran out stops counting at the owner's next
// change. A Lease ends with no change in Redis only when the owner's other
// Leases cover what Redis keeps for it (a pass to the next Lease of its
// cohort, which carries on its deadline; a shared read leaving Leases that
// cover its deadline: see Lease.leaveShare): so Redis never keeps an
// owner's hold longer than its Leases still alive (and the lease margin),
// as a release that writes their state does. A further hold that fails
// once Redis may have granted it (too few replicas acknowledged it, or its
// answer never came) has no Lease: the owner writes its Leases' state back
// at once (RWMutex.restate), or Redis would keep that hold for its lease
// after the Leases ended. Its lock (lock, unlock) serializes those changes, so a release
// never races a further hold of the same owner; the watchdog only ever
// extends (see renew.go), and does not take the lock, so a release writes
// each watchdog Lease as renewed by it (owner.written). The lock is taken within a ctx: a release going
// on in the background (see Lease.Unlock) may hold it for a while.
type owner struct {
	m  *RWMutex
	id string

	mu     chan struct{} // a lock: holding it is having sent into it
	leases []*Lease      // granted under id; ended ones are dropped at the next change
	// first backs leases while the owner has one Lease, as most have: it
	// spares an allocation on every acquire.
	first [1]*Lease
	// unsure is set when an attempt's outcome was not learned (a lost
	// reply, a broken connection): a copy of it may still take the lock, so
	// an acquire that ends without a Lease must give the owner up.
	unsure bool
	// queued is set when a refused attempt left a queue entry (a fair
	// policy's waiter): a Lock that gives up must withdraw it.
	queued bool
	// sent is set once an attempt of the owner was sent (or a release that
	// queues it, as its cohort's successor, may have been applied unseen):
	// a copy of it may still reach Redis, so giving the owner up marks it
	// for the give-up window. An owner only ever queued by a release that
	// Redis confirmed has nothing on its way: its give-up marks it for a
	// moment only.
	sent bool
	// read is set once the owner attempted a read (granted or not, seen or
	// not): a release of an owner that never did need not look for its
	// reads in Redis.
	read bool
	// fast is set when the owner's latest grant came from the fair
	// policies' fast path (a first hold on an idle lock, acquireReply.fast)
	// and cleared by any other grant: its last release then tries
	// fair_unlock_fast first.
	fast bool
	// reserve is how many fencing tokens the owner's write grant reserved,
	// its own included (see attemptResult.reserve): its cohort passes the
	// write on with the others, and its last release is the full one, which
	// closes the range (fair_unlock.lua), when there are others.
	reserve int
	// passed is the highest fencing token its Client's cohort handed out
	// passing the owner's write (cohort.go), 0 if none: its release in
	// Redis raises the last token to it (fair_unlock's full script).
	passed uint64
	// unshared is set once a release leaves the owner nothing in Redis:
	// no read shares its hold any more (readshare.go).
	unshared bool
	// givenUp is set once a release gave the owner up (its last one, or
	// RWMutex.giveUpRunOut after its last Lease ran out): once is enough.
	givenUp bool
	// copies is unsure, readable without the owner's lock: a Lease that
	// ends with no release schedules a give-up only then
	// (RWMutex.giveUpRunOut), not on every loss.
	copies atomic.Bool
	// keep is the latest time (Unix ns) until which Redis may keep a hold
	// of the owner, as far as what the Client sent goes: grants, further
	// holds and renewals only ever move it later (heldOwners).
	keep atomic.Int64
	// held is set while the owner is among its Client's heldOwners, and
	// wrote once it was granted the write: Shutdown then releases it as a
	// writer. Both change under the heldOwners' mu.
	held, wrote atomic.Bool
	// lostRead and lostWrite are set once a renewal found the owner's hold
	// of that mode gone from Redis: every Lease on it is lost, also one
	// that a share or a cohort pass made while that renewal was on its
	// way, and none is made any more (see renewHold.lose).
	lostRead, lostWrite atomic.Bool
}

// markerTTL is how long giving the owner up marks it (owner.sent).
func (o *owner) markerTTL() time.Duration {
	if o.sent {
		return o.m.c.giveUpWindow()
	}
	return time.Millisecond
}

// lost returns the flag that says the owner's hold of mode is gone.
func (o *owner) lost(mode Mode) *atomic.Bool {
	if mode == Read {
		return &o.lostRead
	}
	return &o.lostWrite
}

// tryLock takes the owner's lock if it is free, and reports whether it
// did: Unlock's inline paths (a share left, a cohort's pass) run on the
// caller's goroutine only then.
func (o *owner) tryLock() bool {
	select {
	case o.mu <- struct{}{}:
		return true
	default:
		return false
	}
}

// lock takes the owner's lock, or returns ctx's error.
func (o *owner) lock(ctx context.Context) error {
	if o.tryLock() {
		return nil
	}
	select {
	case o.mu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockBy takes the owner's lock, or returns the error of ctx, bounded by
// deadline unless it is zero. The deadline's context is made only when the
// lock is taken already: most changes find it free.
func (o *owner) lockBy(ctx context.Context, deadline time.Time) error {
	if o.tryLock() {
		return nil
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return o.lock(ctx)
}

func (o *owner) unlock() { <-o.mu }

// ownerState is what an owner still holds alive after a change: the count
// of write holds and the longest time one of them has left, and the time
// each read hold has left, the longest first. It is what a release writes.
// renewedReads counts the reads among them that the watchdog renews.
type ownerState struct {
	writes       int
	wcover       time.Duration
	reads        []time.Duration
	renewedReads int
	// renewed is set when a watchdog Lease counts a whole lease time: the
	// state is what a release writes (owner.written), which renews them.
	renewed bool
}

// alive returns what the owner holds alive besides except, as of now, and
// drops the leases that ended. A lease whose deadline has passed no longer
// counts, even if its timer has not fired yet. Call it with the lock held.
func (o *owner) alive(except *Lease, now time.Time) ownerState {
	return o.holding(except, now, 0)
}

// written is alive as a release sent from now writes it into Redis: a
// watchdog Lease counts the lease time from now, so the release renews it
// (and confirmWritten moves its Deadline once Redis answered). What it
// knows of a watchdog Lease's deadline is not what Redis keeps: a renewal
// round (which does not take the owner's lock) may have reached Redis
// with its answer still on its way, or reach it after this state was read
// and before the release (a copy sent again). Writing the Lease's deadline
// would then set the hold back below the one the renewal confirms, and
// Redis would free the lock while the Lease holds it. Renewing it instead
// keeps Redis at least a lease past now, later than any renewal sent
// before the release reached Redis. Call it with the lock held.
func (o *owner) written(except *Lease, now time.Time) ownerState {
	st := o.holding(except, now, o.m.c.settings().leaseTime)
	if st.renewed {
		// The release may reach Redis up to the accept window late, and
		// keep the hold a lease from then (as a renewal: see renewer.round).
		o.extendKeep(now.Add(o.m.c.acceptWindow() + o.m.c.settings().leaseTime + leaseMargin))
	}
	return st
}

// confirmWritten moves the deadline of o's watchdog Leases besides except
// to sent plus the lease time, after Redis applied a release sent from
// sent that wrote st (owner.written) for them. Call it with the lock held.
func (o *owner) confirmWritten(st ownerState, except *Lease, sent time.Time) {
	if !st.renewed {
		return
	}
	deadline := sent.Add(o.m.c.settings().leaseTime)
	for _, l := range o.leases {
		if l != except && l.watchdog && !l.released {
			l.confirm(deadline)
		}
	}
}

// holding is alive with every watchdog Lease counting at least renew as
// its time left (0: as its deadline says).
func (o *owner) holding(except *Lease, now time.Time, renew time.Duration) ownerState {
	var st ownerState
	kept := o.leases[:0]
	for _, l := range o.leases {
		left, live := l.left(now)
		if !live || l.released {
			continue
		}
		kept = append(kept, l)
		if l == except {
			continue
		}
		if l.watchdog && renew > left {
			left, st.renewed = renew, true
		}
		if l.mode == Write {
			st.writes++
			st.wcover = max(st.wcover, left)
		} else {
			st.reads = append(st.reads, left)
			if l.watchdog {
				st.renewedReads++
			}
		}
	}
	clear(o.leases[len(kept):])
	o.leases = kept
	slices.SortFunc(st.reads, func(a, b time.Duration) int { return int(b - a) })
	return st
}

// count returns how many holds of mode the owner has alive. Call it with
// the lock held.
func (o *owner) count(mode Mode, now time.Time) int {
	n := 0
	for _, l := range o.leases {
		if _, live := l.left(now); live && !l.released && l.mode == mode {
			n++
		}
	}
	return n
}

// heldOwners are the owners of a Client that may hold something in Redis:
// from their first grant until Redis confirmed a release that leaves them
// nothing, or until the latest deadline Redis may keep for them
// (owner.keep) has passed. A Lease's end without a release in Redis never
// leaves Redis keeping a hold longer than the Leases still alive (shares
// and passes stand on a hold that others keep, see Lease.leaveShare), but
// a Lease lost at its deadline may leave one: a renewal whose answer was
// lost may still have kept the hold. Shutdown releases every owner here,
// whether or not a Lease of it is alive.
type heldOwners struct {
	mu sync.Mutex
	m  map[*owner]struct{}
}

// holds records that Redis may keep a hold of o, of mode, until keep.
// A pass or a share adds a Lease to an owner that is here already: it
// takes no lock.
func (h *heldOwners) holds(o *owner, mode Mode, keep time.Time) {
	o.extendKeep(keep)
	if o.held.Load() && (mode == Read || o.wrote.Load()) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[*owner]struct{})
	}
	h.m[o] = struct{}{}
	o.held.Store(true)
	if mode == Write {
		o.wrote.Store(true)
	}
}

// released records that Redis confirmed a release that leaves o nothing.
func (h *heldOwners) released(o *owner) {
	if !o.held.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, o)
	o.held.Store(false)
}

// prune forgets the owners whose holds Redis keeps no longer as of now.
func (h *heldOwners) prune(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for o := range h.m {
		if o.keep.Load() < now.UnixNano() {
			delete(h.m, o)
			o.held.Store(false)
		}
	}
}

// addTo adds to owners every owner that Redis may still keep a hold of,
// with the mode its release must name: the write if it was granted one.
func (h *heldOwners) addTo(owners map[*owner]Mode, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for o := range h.m {
		if _, ok := owners[o]; ok || o.keep.Load() < now.UnixNano() {
			continue
		}
		owners[o] = Read
		if o.wrote.Load() {
			owners[o] = Write
		}
	}
}

// extendKeep moves o.keep to t, if that is later.
func (o *owner) extendKeep(t time.Time) {
	n := t.UnixNano()
	for {
		k := o.keep.Load()
		if k >= n || o.keep.CompareAndSwap(k, n) {
			return
		}
	}
}

// releaseAll releases every hold of o in Redis in one release that leaves
// the owner nothing (an owner whose attempt had an outcome it never learned
// is given up instead, as its last Unlock would). Redis no longer having a
// hold is no failure: it is free already. It is bounded by ctx and by the
// unlock timeout.
func (o *owner) releaseAll(ctx context.Context, mode Mode) error {
	m := o.m
	ctx, cancel := releaseBound(ctx, m.c.settings().unlockTimeout)
	defer cancel()
	if err := o.lock(ctx); err != nil {
		return fmt.Errorf("fairrw: release %q: %w", m.keys.name, err)
	}
	defer o.unlock()
	o.unshared = true
	res, err := m.releaseWithin(ctx, time.Time{}, o, mode, ownerState{}, o.unsure, false)
	if err == nil && res == releaseNotHeld && mode == Write && o.read {
		// The write may be gone while reads stay: an Unlock under way when
		// Shutdown began released it, counting the owner's ended write
		// leases as gone but reads that further holds took meanwhile as
		// alive. A write's release refuses an owner that no longer holds
		// the write, so its reads are released as reads.
		_, err = m.releaseWithin(ctx, time.Time{}, o, Read, ownerState{}, o.unsure, false)
	}
	if err == nil {
		m.c.heldOwners().released(o)
	}
	return err
}

// releaseBound bounds one of Shutdown's releases by d. When ctx has a
// deadline the bound is a deadline, which rueidis honours on every path,
// also in the handshake of a connection it makes again; without one, a
// timer (see withTimer), so that the cancellation of ctx, or a Close,
// stops a release under way at once.
func releaseBound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithTimeout(ctx, d)
	}
	return withTimer(ctx, d)
}
