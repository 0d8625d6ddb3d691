package fairrw

import (
	"context"
	"sync"
	"time"
)

// The registry of a Client's waiters: one group per lock name, which owns
// the subscription its waiters share, and the group's lifecycle (join,
// leave, rename, close).

// waitRegistry keeps, per lock name, the waiters of this Client and the one
// subscription they share. The subscription starts with the first waiter and
// ends with the last.
//
// Wake-ups are targeted so that a release costs one retry, not one per
// waiter: a "0" message or an invalidation wakes one waiter; a "1" message
// (a writer left) wakes every waiting reader and one writer; a reader that
// enters wakes the next waiting reader, which may share the lock. A waiter
// that is already retrying absorbs a wake-up (it retries once more if its
// attempt fails), so concurrent signals of one release do not multiply.
type waitRegistry struct {
	c         *Client
	mu        sync.Mutex
	groups    map[string]*waitGroup // by lockKeys.channel
	byTracked map[string]*waitGroup // by lockKeys.tracked, where there is one
	wg        sync.WaitGroup        // subscription loops and probers
	// closed: close has begun; no subscription starts after it. A quorum
	// joins its nodes' registries without entering their Clients' calls,
	// so it may join one that its Client is closing: its waiter learns of
	// the close from the Client's closing channel.
	closed bool
	// unsettledUntil: a subscription was lost lately, so a new one may be
	// routed by a stale slot map too (see topology.go).
	unsettledUntil time.Time
}

type waitGroup struct {
	registry  *waitRegistry
	keys      *lockKeys
	policy    policyImpl // decodes the channel's messages
	waiters   []*waiter  // FIFO
	ready     chan struct{}
	confirmed bool
	ctx       context.Context // ends with the group
	cancel    context.CancelFunc
	// suspectSince: the subscription was lost since then, and no probe has
	// come back yet; probes are the ones sent since, probing whether a
	// prober runs, kick wakes it (see topology.go).
	suspectSince time.Time
	probes       []string
	probing      bool
	kick         chan struct{}
	// listeners keep the group, and its subscription, while none of its
	// waiters waits (listen).
	listeners int
}

func newWaitRegistry(c *Client) *waitRegistry {
	return &waitRegistry{c: c, groups: make(map[string]*waitGroup), byTracked: make(map[string]*waitGroup)}
}

// join adds a waiter to the lock's group, starting the group's subscription
// if it is the first. The waiter counts as busy: it is about to retry.
func (r *waitRegistry) join(k *lockKeys, p policyImpl, mode Mode, owner string) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.joinLocked(k, p, mode, owner)
}

func (r *waitRegistry) joinLocked(k *lockKeys, p policyImpl, mode Mode, owner string) *waiter {
	g := r.groupLocked(k, p)
	w := &waiter{group: g, mode: mode, owner: owner, wake: make(chan wakeSource, 1), busy: true, closing: r.c.closingDone()}
	g.waiters = append(g.waiters, w)
	return w
}

// groupLocked returns the lock's group, starting it and its subscription
// if there is none.
func (r *waitRegistry) groupLocked(k *lockKeys, p policyImpl) *waitGroup {
	g := r.groups[k.channel]
	if g == nil {
		ctx, cancel := context.WithCancel(context.Background())
		g = &waitGroup{registry: r, keys: k, policy: p, ready: make(chan struct{}), ctx: ctx, cancel: cancel}
		r.groups[k.channel] = g
		if k.tracked != "" {
			r.byTracked[k.tracked] = g
		}
		if !r.closed {
			r.wg.Add(1)
			go r.subscribe(ctx, g)
		}
	}
	return g
}

// listen keeps the lock's group and its subscription until unlisten, also
// while none of its waiters waits: a Lock that joins meanwhile listens from
// its first attempt (joinListening), and needs no attempt after a
// subscription made for it. A busy cohort listens while it lives (see
// cohort.prequeue): its next leader queues again and again.
func (r *waitRegistry) listen(k *lockKeys, p policyImpl) *waitGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groupLocked(k, p)
	g.listeners++
	return g
}

// unlisten ends what listen began; a group left with no waiter and no
// listener ends.
func (r *waitRegistry) unlisten(g *waitGroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.listeners--
	r.endIfIdleLocked(g)
}

// endIfIdleLocked ends g, and its subscription, once no waiter and no
// listener keeps it.
func (r *waitRegistry) endIfIdleLocked(g *waitGroup) {
	if len(g.waiters) == 0 && g.listeners == 0 && r.groups[g.keys.channel] == g {
		delete(r.groups, g.keys.channel)
		delete(r.byTracked, g.keys.tracked)
		g.cancel()
	}
}

// joinListening adds a waiter as join does, but only when the lock's group
// exists and its subscription is confirmed (nil otherwise): a waiter that
// joins before its first attempt then misses no message, and a Lock that
// nobody in this Client waits on does not subscribe for an attempt that
// is likely granted.
func (r *waitRegistry) joinListening(k *lockKeys, p policyImpl, mode Mode, owner string) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.groups[k.channel]; g == nil || !g.confirmed {
		return nil
	}
	return r.joinLocked(k, p, mode, owner)
}

// joinUnqueued adds a waiter that keeps no place in a fair policy's queue
// (a quorum's node waiter): no grant ever names it, and "r" wakes it.
//
// Its doorbell is wake, which the quorum waiter shares across its nodes:
// a release on any node wakes it through one channel.
func (r *waitRegistry) joinUnqueued(k *lockKeys, p policyImpl, mode Mode, wake chan wakeSource) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.joinLocked(k, p, mode, "")
	w.unqueued = true
	w.wake = wake
	return w
}

// waiting says whether a waiter of this Client waits on the lock k now: its
// holder's release will find it queued, so a fast release (which applies
// only while no one waits) would be a round trip for nothing.
func (r *waitRegistry) waiting(k *lockKeys) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[k.channel]
	return g != nil && len(g.waiters) > 0
}

// leave removes a waiter. A wake-up it received but did not use is passed on
// (unless it told of a grant to its own owner), and the last waiter out ends
// the subscription.
func (r *waitRegistry) leave(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := w.group
	for i, x := range g.waiters {
		if x == w {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			break
		}
	}
	select {
	case src := <-w.wake:
		// A grant to its own owner concerns no one else (it arrived
		// while its attempt, which took the lock, was in flight).
		if src != wakeGrant && src != wakeReply {
			r.wakeOneLocked(g, wakeHandover, 0)
		}
	default:
	}
	r.endIfIdleLocked(g)
}

// rename gives a waiter the owner its wait goes on as (see RWMutex.wait).
func (r *waitRegistry) rename(w *waiter, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.owner = owner
	w.granted = false // a grant to the owner it leaves is not its own
}

// close waits for every subscription loop to end. Close calls it once no
// call is in progress, so every group has already lost its last waiter.
func (r *waitRegistry) close() {
	r.mu.Lock()
	r.closed = true
	for _, g := range r.groups {
		g.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
