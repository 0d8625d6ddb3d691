package wait

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// The registry of a Client's waiters: one group per lock name, which owns
// the subscription its waiters share, and the group's lifecycle (join,
// leave, rename, close).

// Config is what a registry needs of its Client: where its subscriptions
// and probes go, and when to give up. The Client connects after it makes its
// registry, so what connecting settles is read through funcs, when a
// subscription starts.
type Config struct {
	// Redis returns the rueidis client that subscriptions and probes go on.
	Redis func() rueidis.Client
	// Publish returns the command that releases publish with (PUBLISH or
	// SPUBLISH): a subscription must agree with it.
	Publish func() string
	// Closing closes when the Client begins closing: its waiters give up
	// with ErrClosed.
	Closing <-chan struct{}
	// Halt ends when a Shutdown is cut short: a probe still under way
	// gives up at once.
	Halt context.Context
	// Tracking reports whether the Client's connections track keys
	// (client tracking): a subscription's connection turns it off. nil:
	// they do not.
	Tracking func() bool
	// Connected waits until the Client is connected, and reports whether
	// it is: false once ctx ends or the Client closes or cannot connect.
	// A subscription waits on it before it reads Redis: a quorum's waiter
	// joins every node's waiters, connected or not, and Redis returns nil
	// for a Client still connecting in the background (a subscription
	// loop that read it panicked). nil: always connected.
	Connected func(ctx context.Context) bool
}

// connected is Connected, or true without one.
func (c *Config) connected(ctx context.Context) bool {
	return c.Connected == nil || c.Connected(ctx)
}

// Keys are what the waiters of a lock listen on, as its policy names them.
type Keys struct {
	// Channel is the pub/sub channel releases publish on.
	Channel string
	// Tracked is the key whose invalidation means "try again"; "" for none.
	Tracked string
	// Format is the policy's messages on Channel.
	Format Format
}

// Registry keeps, per lock name, the waiters of this Client and the one
// subscription they share. The subscription starts with the first waiter and
// ends with the last (in Redis, once its connection closes: see
// connections.go).
//
// Wake-ups are targeted so that a release costs one retry, not one per
// waiter: a "0" message or an invalidation wakes one waiter; a "1" message
// (a writer left) wakes every waiting reader and one writer; a reader that
// enters wakes the next waiting reader, which may share the lock. A waiter
// that is already retrying absorbs a wake-up (it retries once more if its
// attempt fails), so concurrent signals of one release do not multiply.
type Registry struct {
	cfg       Config
	mu        sync.Mutex
	groups    map[string]*Group // by Keys.Channel
	byTracked map[string]*Group // by Keys.Tracked, where there is one
	wg        sync.WaitGroup    // subscription loops and probers
	// closed: close has begun; no subscription starts after it. A quorum
	// joins its nodes' registries without entering their Clients' calls,
	// so it may join one that its Client is closing: its waiter learns of
	// the close from the Client's closing channel.
	closed bool
	// done closes when close begins: a connection's linger ends.
	done chan struct{}
	// unsettledUntil: a subscription was lost lately, so a new one may be
	// routed by a stale slot map too (see topology.go).
	unsettledUntil time.Time
	// conns: by slot, the connection that takes new subscriptions;
	// allConns: every connection not closed yet (connections.go).
	conns    map[uint16]*subConn
	allConns map[*subConn]struct{}
	watchers sync.WaitGroup // route watches (connections.go)
}

// Group is the waiters of one lock in a registry, and their subscription.
type Group struct {
	registry  *Registry
	keys      *Keys
	waiters   []*Waiter // FIFO
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

// NewRegistry returns the registry of a Client's waiters.
func NewRegistry(cfg Config) *Registry {
	return &Registry{cfg: cfg, groups: make(map[string]*Group), byTracked: make(map[string]*Group),
		done: make(chan struct{}), conns: make(map[uint16]*subConn), allConns: make(map[*subConn]struct{})}
}

// Registry returns the registry that g belongs to.
func (g *Group) Registry() *Registry { return g.registry }

// Join adds a waiter to the lock's group, starting the group's subscription
// if it is the first. The waiter counts as busy: it is about to retry.
func (r *Registry) Join(k *Keys, mode Mode, owner string) *Waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.joinLocked(k, mode, owner)
}

func (r *Registry) joinLocked(k *Keys, mode Mode, owner string) *Waiter {
	g := r.groupLocked(k)
	w := &Waiter{group: g, mode: mode, owner: owner, wake: make(chan Source, 1), busy: true, closing: r.cfg.Closing}
	g.waiters = append(g.waiters, w)
	return w
}

// groupLocked returns the lock's group, starting it and its subscription
// if there is none.
func (r *Registry) groupLocked(k *Keys) *Group {
	g := r.groups[k.Channel]
	if g == nil {
		ctx, cancel := context.WithCancel(context.Background())
		g = &Group{registry: r, keys: k, ready: make(chan struct{}), ctx: ctx, cancel: cancel}
		r.groups[k.Channel] = g
		if k.Tracked != "" {
			r.byTracked[k.Tracked] = g
		}
		if !r.closed {
			r.wg.Add(1)
			go r.subscribe(ctx, g)
		}
	}
	return g
}

// Listen keeps the lock's group and its subscription until Unlisten, also
// while none of its waiters waits: a Lock that joins meanwhile listens from
// its first attempt (JoinListening), and needs no attempt after a
// subscription made for it. A busy cohort listens while it lives (see
// fairrw's cohort.prequeue): its next leader queues again and again.
func (r *Registry) Listen(k *Keys) *Group {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groupLocked(k)
	g.listeners++
	return g
}

// Unlisten ends what Listen began; a group left with no waiter and no
// listener ends.
func (r *Registry) Unlisten(g *Group) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.listeners--
	r.endIfIdleLocked(g)
}

// endIfIdleLocked ends g, and its subscription, once no waiter and no
// listener keeps it.
func (r *Registry) endIfIdleLocked(g *Group) {
	if len(g.waiters) == 0 && g.listeners == 0 && r.groups[g.keys.Channel] == g {
		delete(r.groups, g.keys.Channel)
		delete(r.byTracked, g.keys.Tracked)
		g.cancel()
	}
}

// JoinListening adds a waiter as Join does, but only when the lock's group
// exists and its subscription is confirmed (nil otherwise): a waiter that
// joins before its first attempt then misses no message, and a Lock that
// nobody in this Client waits on does not subscribe for an attempt that
// is likely granted.
func (r *Registry) JoinListening(k *Keys, mode Mode, owner string) *Waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.groups[k.Channel]; g == nil || !g.confirmed {
		return nil
	}
	return r.joinLocked(k, mode, owner)
}

// JoinUnqueued adds a waiter that keeps no place in a fair policy's queue
// (a quorum's node waiter): no grant ever names it, and "r" wakes it.
//
// Its doorbell is wake, which the quorum waiter shares across its nodes:
// a release on any node wakes it through one channel.
func (r *Registry) JoinUnqueued(k *Keys, mode Mode, wake chan Source) *Waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.joinLocked(k, mode, "")
	w.unqueued = true
	w.wake = wake
	return w
}

// Waiting says whether a waiter of this Client waits on the lock k now: its
// holder's release will find it queued, so a fast release (which applies
// only while no one waits) would be a round trip for nothing.
func (r *Registry) Waiting(k *Keys) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[k.Channel]
	return g != nil && len(g.waiters) > 0
}

// Leave removes a waiter. A wake-up it received but did not use is passed on
// (unless it told of a grant to its own owner), and the last waiter out ends
// the subscription.
func (r *Registry) Leave(w *Waiter) {
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
		if src != Grant && src != Reply {
			r.wakeOneLocked(g, Handover, 0)
		}
	default:
	}
	r.endIfIdleLocked(g)
}

// Rename gives a waiter the owner its wait goes on as (see fairrw's acquisition.asNewOwner).
func (r *Registry) Rename(w *Waiter, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.owner = owner
	w.granted = false // a grant to the owner it leaves is not its own
}

// Close waits for every subscription loop to end, and closes the
// connections they went on. The Client's Close calls it once no call is in
// progress, so every group has already lost its last waiter.
func (r *Registry) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.done)
	}
	for _, g := range r.groups {
		g.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
	r.closeConns()
}

// Groups counts the locks that have a group now: what the registry keeps,
// which a Client that nobody waits on no longer does.
func (r *Registry) Groups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.groups)
}
