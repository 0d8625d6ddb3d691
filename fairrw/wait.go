package fairrw

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
)

// wakeSource says what woke a waiter, for the handoff figures per path.
type wakeSource uint8

const (
	wakeNone         wakeSource = iota
	wakePubSub                  // a release's message on the lock's channel
	wakeInvalidation            // client tracking: the lock key changed or expired
	wakeTimer                   // the PTTL that the failed attempt returned ran out
	wakeResubscribe             // the subscription was re-made: messages may be lost
	wakeHandover                // a waiter that left, or a reader that entered, passed it on
	wakeGrant                   // a release granted it the lock, and its message said so
	wakeReply                   // a release in this Client granted it the lock, and its reply said so
)

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
}

type waiter struct {
	group *waitGroup
	mode  Mode
	owner string
	wake  chan wakeSource // one slot: a doorbell
	busy  bool            // retrying now (guarded by waitRegistry.mu)
	// unqueued: a quorum's waiter, which keeps no place in a fair
	// policy's queue, so no "w:<owner>" message ever names it.
	unqueued bool
	source   wakeSource // what woke it last
	closing  <-chan struct{}
	// granted: a release granted the waiter's owner the write, with token
	// (guarded by waitRegistry.mu); see takeGrant.
	granted bool
	token   uint64
	grantBy wakeSource
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
	g := r.groups[k.channel]
	if g == nil {
		ctx, cancel := context.WithCancel(context.Background())
		g = &waitGroup{registry: r, keys: k, policy: p, ready: make(chan struct{}), ctx: ctx, cancel: cancel}
		r.groups[k.channel] = g
		if k.tracked != "" {
			r.byTracked[k.tracked] = g
		}
		r.wg.Add(1)
		go r.subscribe(ctx, g)
	}
	w := &waiter{group: g, mode: mode, owner: owner, wake: make(chan wakeSource, 1), busy: true, closing: r.c.closing}
	g.waiters = append(g.waiters, w)
	return w
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
	if len(g.waiters) == 0 {
		delete(r.groups, g.keys.channel)
		delete(r.byTracked, g.keys.tracked)
		g.cancel()
	}
}

// rename gives a waiter the owner its wait goes on as (see RWMutex.wait).
func (r *waitRegistry) rename(w *waiter, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.owner = owner
	w.granted = false // a grant to the owner it leaves is not its own
}

// granted is called when a waiter got the lock: a reader passes the turn to
// the next idle reader, which may share the lock with it.
func (r *waitRegistry) granted(w *waiter) {
	if w.mode != Read {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range w.group.waiters {
		if x != w && x.mode == Read && !x.busy {
			r.signalLocked(x, wakeHandover)
			return
		}
	}
}

// wakeOneLocked wakes one waiter of mode (0: any): one already retrying
// absorbs it; otherwise the longest-waiting idle one is woken.
func (r *waitRegistry) wakeOneLocked(g *waitGroup, src wakeSource, mode Mode) {
	var idle *waiter
	for _, w := range g.waiters {
		if mode != 0 && w.mode != mode {
			continue
		}
		if w.busy {
			r.signalLocked(w, src)
			return
		}
		if idle == nil {
			idle = w
		}
	}
	if idle != nil {
		r.signalLocked(idle, src)
	}
}

// wakeAllLocked wakes every waiter.
func (r *waitRegistry) wakeAllLocked(g *waitGroup, src wakeSource) {
	for _, w := range g.waiters {
		r.signalLocked(w, src)
	}
}

func (r *waitRegistry) signalLocked(w *waiter, src wakeSource) {
	w.busy = true
	select {
	case w.wake <- src:
	default: // a wake-up is pending already: the waiter will retry anyway
	}
}

// onMessage handles a message on a lock's channel: the lock's policy says
// whom it lets in (policyImpl.signal). A probe (see topology.go) lets no
// one in.
func (r *waitRegistry) onMessage(g *waitGroup, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probeEchoLocked(g, msg) {
		return
	}
	r.applyLocked(g, g.policy.signal(msg), wakePubSub)
}

// deliver tells the waiter of owner on lock k, if it waits in this Client,
// that a release granted it the lock with token: the releasing Unlock's
// reply, which arrives before the release's message.
func (r *waitRegistry) deliver(k *lockKeys, owner string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.groups[k.channel]; g != nil {
		r.applyLocked(g, wakeSignal{writer: writerNamed, owner: owner, granted: true, token: token}, wakeReply)
	}
}

// applyLocked wakes the waiters sig lets in.
func (r *waitRegistry) applyLocked(g *waitGroup, sig wakeSignal, src wakeSource) {
	if sig.readers {
		r.wakeReadersLocked(g, src)
	}
	switch sig.writer {
	case writerOne:
		r.wakeOneLocked(g, src, Write)
	case writerOrAnyMode:
		r.wakeOneLocked(g, src, 0)
	case writerUnqueued:
		for _, w := range g.waiters {
			if w.mode == Write && w.unqueued {
				r.signalLocked(w, src)
				break
			}
		}
	case writerNamed:
		for _, w := range g.waiters {
			if w.mode != Write || w.owner != sig.owner {
				continue
			}
			if sig.granted && w.granted && sig.token <= w.token {
				// A grant it was told of already: the reply and the
				// message of one release both name it. The first
				// wake-up makes it look at the grant; a second would
				// stay pending until it leaves and be passed on to a
				// waiter that then retries for nothing.
				continue
			}
			if sig.granted { // the latest grant counts
				w.granted, w.token = true, sig.token
				w.grantBy = wakeGrant
				if src == wakeReply {
					w.grantBy = wakeReply
				}
			}
			r.signalLocked(w, w.grantBy)
		}
	}
}

// takeGrant returns the grant a release made to the waiter's owner, if one
// was delivered.
func (w *waiter) takeGrant() (token uint64, by wakeSource, ok bool) {
	r := w.registry()
	r.mu.Lock()
	defer r.mu.Unlock()
	return w.token, w.grantBy, w.granted
}

func (r *waitRegistry) wakeReadersLocked(g *waitGroup, src wakeSource) {
	for _, w := range g.waiters {
		if w.mode == Read {
			r.signalLocked(w, src)
		}
	}
}

// onInvalidations is the rueidis client-tracking hook. It runs on the
// connection's reading goroutine, so it only signals. nil means the
// connection closed or the server flushed its tracking table: any key may
// have changed, so every waiter retries.
func (r *waitRegistry) onInvalidations(messages []rueidis.RedisMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if messages == nil {
		for _, g := range r.groups {
			r.wakeAllLocked(g, wakeInvalidation)
		}
		return
	}
	for _, m := range messages {
		key, err := m.ToString()
		if err != nil {
			continue
		}
		if g := r.byTracked[key]; g != nil {
			// An invalidation says that the lock changed, not how: a
			// downgrade admits every reader (and publishes nothing), a
			// release one writer or every reader. Waking one waiter, a
			// writer that then fails, would leave the readers asleep.
			r.wakeReadersLocked(g, wakeInvalidation)
			r.wakeOneLocked(g, wakeInvalidation, Write)
		}
	}
}

// onSubscription runs on every subscribe confirmation. The first one lets
// the group's waiters retry; a later one means the subscription was lost and
// re-made, and messages may have been missed meanwhile, so everyone retries.
// Either may have been routed to a node that the lock's messages do not
// reach yet: the group is then suspect until a probe comes back (see
// topology.go).
func (r *waitRegistry) onSubscription(g *waitGroup, s rueidis.PubSubSubscription) {
	if s.Kind != "subscribe" && s.Kind != "ssubscribe" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !g.confirmed {
		g.confirmed = true
		close(g.ready)
		r.firstSubscriptionLocked(g)
		return
	}
	r.wakeAllLocked(g, wakeResubscribe)
	r.suspectLocked(g, false)
	r.proveLocked(g)
}

// subscribe is the group's subscription loop. It re-subscribes whenever the
// server drops the subscription (failover, slot migration, a lost
// connection) until the group's last waiter leaves, then unsubscribes.
func (r *waitRegistry) subscribe(ctx context.Context, g *waitGroup) {
	defer r.wg.Done()
	rdb := r.c.rdb
	sharded := r.c.publish == compat.SPublish
	channel := g.keys.channel
	// rueidis recycles a command once it ran: build a fresh one every time.
	subscribe := func() rueidis.Completed {
		if sharded {
			return rdb.B().Ssubscribe().Channel(channel).Build()
		}
		return rdb.B().Subscribe().Channel(channel).Build()
	}
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) { r.onSubscription(g, s) })
	backoff := minRetryBackoff
	for ctx.Err() == nil {
		err := rdb.Receive(hooked, subscribe(), func(m rueidis.PubSubMessage) { r.onMessage(g, m.Message) })
		if ctx.Err() != nil {
			break
		}
		// Messages are lost until it is made again, and maybe after.
		r.lostSubscription(g, err != nil)
		if err == nil { // the server ended the subscription: make it again at once
			backoff = minRetryBackoff
			continue
		}
		if sleepCtx(ctx, nil, backoff) != nil {
			break
		}
		backoff = min(backoff*2, maxRetryBackoff)
	}
	// rueidis only drops the local listener when Receive returns; the server
	// would keep the subscription (and keep sending) until told otherwise.
	// A Shutdown cut short (halt) does not wait for a Redis that does not
	// answer, where rueidis can stop the command: the server drops the
	// subscription with the connection.
	uctx, cancel := context.WithTimeout(r.c.halt, r.c.unlockTimeout)
	defer cancel()
	unsubscribe := rdb.B().Unsubscribe().Channel(channel).Build()
	if sharded {
		unsubscribe = rdb.B().Sunsubscribe().Channel(channel).Build()
	}
	_ = rdb.Do(uctx, unsubscribe).Error()
}

// close waits for every subscription loop to end. Close calls it once no
// call is in progress, so every group has already lost its last waiter.
func (r *waitRegistry) close() {
	r.mu.Lock()
	for _, g := range r.groups {
		g.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// awaitSubscription blocks until the group's subscription is confirmed, so
// that the retry that follows cannot miss a release's message. It gives up
// waiting after bound (the PTTL): the retry is due then anyway.
func (w *waiter) awaitSubscription(ctx context.Context, bound time.Duration) error {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-w.group.ready:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return ErrClosed
	}
}

// sleep waits for a wake-up, at most bound (shortened while the group's
// subscription is suspect: see napBound). The waiter is idle meanwhile, so
// that a wake-up goes to it rather than being absorbed.
func (w *waiter) sleep(ctx context.Context, bound time.Duration) error {
	bound = w.napBound(bound)
	w.setBusy(false)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case src := <-w.wake: // the waker marked it busy
		w.source = src
		return nil
	case <-t.C:
		w.setBusy(true)
		w.source = wakeTimer
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return ErrClosed
	}
}

func (w *waiter) registry() *waitRegistry { return w.group.registry }

// setBusy marks the waiter as retrying (a wake-up meanwhile is absorbed by
// its next attempt) or idle (asleep: a wake-up goes to it).
func (w *waiter) setBusy(busy bool) {
	r := w.registry()
	r.mu.Lock()
	w.busy = busy
	r.mu.Unlock()
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

// String names the wake-up path, as Lease.WokenBy reports it.
func (s wakeSource) String() string {
	switch s {
	case wakePubSub:
		return "pubsub"
	case wakeInvalidation:
		return "invalidation"
	case wakeTimer:
		return "timer"
	case wakeResubscribe:
		return "resubscribe"
	case wakeHandover:
		return "handover"
	case wakeGrant:
		return "grant"
	case wakeReply:
		return "reply"
	default:
		return ""
	}
}
