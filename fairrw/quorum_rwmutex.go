package fairrw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// A QuorumRWMutex is a handle on one read-write lock over a Quorum's nodes.
// Every acquire is a new owner on every node, so goroutines may share a
// handle. Its Leases are quorum leases (see Lease), which take no further
// holds. Do not copy a handle.
type QuorumRWMutex struct {
	q     *Quorum
	name  string
	nodes []*RWMutex
	err   error // the name's validation error
}

// RWMutex returns a handle on the lock name over every node of the quorum.
// An invalid name fails the handle's first call (ErrInvalidName).
func (q *Quorum) RWMutex(name string) *QuorumRWMutex {
	m := &QuorumRWMutex{q: q, name: name}
	for _, c := range q.clients {
		h := c.RWMutex(name)
		if m.err == nil {
			m.err = h.err
		}
		m.nodes = append(m.nodes, h)
	}
	return m
}

// Lock takes the write lock on a majority of nodes, waiting until it is
// granted or ctx is done. A round that got no majority gives back every hold
// it got, so nothing stays held when ctx ends.
func (m *QuorumRWMutex) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.Quorum.Lock", Write, true, opts)
}

// RLock takes a read lock on a majority of nodes, waiting as Lock does.
func (m *QuorumRWMutex) RLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.Quorum.RLock", Read, true, opts)
}

// TryLock makes one round of attempts at the write lock and returns
// ErrNotAcquired unless a majority of nodes granted it.
func (m *QuorumRWMutex) TryLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.Quorum.TryLock", Write, false, opts)
}

// TryRLock makes one round of attempts at a read lock and returns
// ErrNotAcquired unless a majority of nodes granted it.
func (m *QuorumRWMutex) TryRLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return m.traced(ctx, "fairrw.Quorum.TryRLock", Read, false, opts)
}

// traced runs acquire inside a span of the first node's Client, and returns
// the quorum lease as a Lease.
func (m *QuorumRWMutex) traced(ctx context.Context, op string, mode Mode, wait bool, opts []AcquireOption) (*Lease, error) {
	ctx, tr := m.q.clients[0].telemetry().startAcquire(ctx, op, m.name, mode)
	l, err := m.acquire(ctx, mode, wait, opts, &tr.stats.attempts)
	tr.end(nil, err)
	if l == nil {
		return nil, err
	}
	return &Lease{q: l, mode: mode}, err
}

// Backoff after a round that split the nodes between waiters: random in
// [0, splitBackoff<<splits), at most maxSplitBackoff or four times as long
// as the round took, whichever is longer (see splitPause).
const (
	splitBackoff    = 5 * time.Millisecond
	maxSplitBackoff = 200 * time.Millisecond
)

// splitPauseLimit bounds the pause after the splits-th split round in a
// row, one that took took. Waiters that split the nodes break the tie
// only when one of them starts its next round a whole round ahead of the
// others: pauses shorter than a round put them all back in the same
// round. With rounds of a few milliseconds, 200 ms is many rounds; on a
// Redis answering slowly (a loaded machine, a distant node) a round can
// take longer than that, and a fixed cap kept three waiters splitting
// the nodes for over 5 s with the name free. So the cap is four rounds:
// among three waiters pausing at random within it, the first one ahead
// by a round happens within a few splits.
func splitPauseLimit(splits int, took time.Duration) time.Duration {
	return min(splitBackoff<<splits, max(maxSplitBackoff, 4*took))
}

func (m *QuorumRWMutex) acquire(ctx context.Context, mode Mode, waits bool, opts []AcquireOption, rounds *int) (*quorumLease, error) {
	if m.err != nil {
		return nil, m.err
	}
	cfg := acquireConfig{lease: m.q.leaseTime}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil AcquireOption", ErrInvalidOption)
		}
		if err := o.applyAcquire(&cfg); err != nil {
			return nil, err
		}
	}
	if err := m.q.enter(); err != nil {
		return nil, closedError(m.name)
	}
	var w *quorumWait
	defer func() {
		if w != nil {
			w.leave()
		}
	}()
	splits := 0
	woken := wait.None // what ended the last sleep
	if waits {
		opts = append(opts[:len(opts):len(opts)], notifyWhenFree)
	}
	for {
		*rounds++
		began := time.Now()
		out := m.round(ctx, mode, opts, cfg.lease)
		if out.err != nil || out.lease != nil {
			if out.lease != nil {
				out.lease.woken = woken
			}
			return out.lease, out.err
		}
		if !waits {
			return nil, fmt.Errorf("%w: %q (%s): granted on %d of %d nodes, %d needed",
				ErrNotAcquired, m.name, mode, out.granted, len(m.nodes), m.q.majority)
		}
		bound := min(out.bound, m.q.leaseTime/3)
		if w == nil {
			// Subscribe on every node before the next round, so that no
			// release between the round and the sleep is missed.
			w = m.join(mode)
			if err := w.awaitSubscriptions(ctx, bound); err != nil {
				return nil, m.waitError(err)
			}
			continue
		}
		if out.granted > 0 { // split with other waiters: let one of them win
			splits = min(splits+1, 16)
			delay := rand.N(splitPauseLimit(splits, time.Since(began)))
			if err := w.pause(ctx, delay); err != nil {
				return nil, m.waitError(err)
			}
			continue
		}
		splits = 0
		src, err := w.sleep(ctx, bound)
		if err != nil {
			return nil, m.waitError(err)
		}
		woken = src
	}
}

func (m *QuorumRWMutex) waitError(err error) error {
	if errors.Is(err, ErrClosed) {
		return closedError(m.name)
	}
	return tag(fmt.Sprintf("fairrw: waiting for %q on a quorum: %s", m.name, reason(err)), err)
}

// nodeResult is one node's answer in a round.
type nodeResult struct {
	i     int
	lease *Lease
	bound time.Duration // the PTTL of a refusal
	err   error
}

// roundOutcome is a round decided: a lease, or how many nodes granted
// (given back since) and the shortest PTTL among the refusals.
type roundOutcome struct {
	lease   *quorumLease
	granted int
	bound   time.Duration
	err     error
}

// round makes one attempt on every node at once and waits for their
// answers, at most the node timeout. With a majority of grants still valid
// it returns the quorum lease; otherwise it gives back every grant. Nodes
// that answer after the round was decided give back what they got.
func (m *QuorumRWMutex) round(ctx context.Context, mode Mode, opts []AcquireOption, lease time.Duration) roundOutcome {
	n := len(m.nodes)
	results := make(chan nodeResult, n)
	nctx, cancel := context.WithTimeout(ctx, m.q.nodeTimeout)
	// A node that refuses connections counts as refusing at once, not at
	// the node timeout: its attempt never reached it, so it holds nothing.
	opts = append(opts[:len(opts):len(opts)], failUnreachable)
	for i, h := range m.nodes {
		go func() {
			var stats acquireStats
			l, err := h.acquire(nctx, mode, false, opts, &stats)
			r := nodeResult{i: i, lease: l, err: err}
			var refused *notAcquiredError
			if errors.As(err, &refused) {
				r.bound = refused.bound
			}
			results <- r
		}()
	}
	grants := make([]*Lease, n)
	out := roundOutcome{bound: m.q.nodeTimeout}
	refusals, closed, answered := 0, 0, 0
	var fatal error
	timer := time.NewTimer(m.q.nodeTimeout)
collect:
	for answered < n {
		select {
		case r := <-results:
			answered++
			var refused *notAcquiredError
			switch {
			case r.err == nil:
				grants[r.i] = r.lease
			case errors.As(r.err, &refused):
				if refusals == 0 || r.bound < out.bound {
					out.bound = r.bound
				}
				refusals++
			case errors.Is(r.err, ErrClosed):
				closed++
			case errors.Is(r.err, ErrPolicyMismatch), errors.Is(r.err, ErrInvalidOption), errors.Is(r.err, ErrInvalidName):
				// The name is held under another policy: waiting would
				// not change it. (A node's upgrade refusal is not fatal:
				// the handle checked for an upgrade itself, so it comes
				// from a hold being given back there, soon gone.)
				fatal = r.err
			}
		case <-timer.C:
			break collect
		}
	}
	timer.Stop()
	cancel() // the nodes still running give up, and give back what they got
	if late := n - answered; late > 0 {
		m.q.background(func() {
			for range late {
				if r := <-results; r.lease != nil {
					_ = r.lease.unlockAs(context.Background(), true)
				}
			}
		})
	}

	held := m.fence(ctx, mode, grants)
	out.granted = held.count()
	if out.granted >= m.q.majority {
		l := newQuorumLease(m, mode, held, lease)
		if !l.deadline().IsZero() && time.Now().Before(l.deadline()) {
			l.start()
			return roundOutcome{lease: l}
		}
	}
	held.release(ctx, m.q, len(grants))
	switch {
	case fatal != nil:
		out.err = fatal
	case ctx.Err() != nil:
		out.err = fmt.Errorf("fairrw: acquire %q on a quorum: %w", m.name, ctx.Err())
	case closed >= m.q.majority:
		out.err = closedError(m.name)
	}
	return out
}

// quorumHolds are the node leases of one grant, by node (nil where a node
// did not grant), and its fencing token.
type quorumHolds struct {
	leases []*Lease
	token  uint64
}

func (h quorumHolds) count() int {
	n := 0
	for _, l := range h.leases {
		if l != nil {
			n++
		}
	}
	return n
}

// release unlocks every node lease of h at once and returns how many were
// freed. It waits for every node, except that once need of them are freed
// it waits at most the node timeout more: a node that is down would hold an
// Unlock for its Client's whole unlock timeout, so its release goes on in
// the background (see Quorum.Close).
func (h quorumHolds) release(ctx context.Context, q *Quorum, need int) int {
	done := make(chan error, len(h.leases))
	n := 0
	for _, l := range h.leases {
		if l != nil {
			n++
			go func() { done <- l.unlockAs(ctx, true) }()
		}
	}
	freed, answered := 0, 0
	var grace <-chan time.Time
wait:
	for answered < n {
		select {
		case err := <-done:
			answered++
			if err == nil {
				freed++
			}
			if freed == need && grace == nil {
				t := time.NewTimer(q.nodeTimeout)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			break wait
		}
	}
	if rest := n - answered; rest > 0 {
		q.background(func() {
			for range rest {
				<-done
			}
		})
	}
	return freed
}

var fenceRaise = script.New("fence_raise", true)

// fence picks the grant's fencing token, the highest of its nodes' tokens.
// For a write grant the nodes whose counter is lower are raised to it first,
// so that any later majority (which shares a node with this one) mints a
// greater token; a node that could not be raised is given back. Under a
// majority of grants nothing is raised: the round fails anyway.
func (m *QuorumRWMutex) fence(ctx context.Context, mode Mode, grants []*Lease) quorumHolds {
	h := quorumHolds{leases: grants}
	for _, l := range grants {
		if l != nil {
			h.token = max(h.token, l.Token())
		}
	}
	if mode != Write || h.count() < m.q.majority {
		return h
	}
	type raised struct {
		i   int
		err error
	}
	done := make(chan raised, len(grants))
	n := 0
	for i, l := range grants {
		if l == nil || l.Token() == h.token {
			continue
		}
		n++
		go func() {
			c := m.nodes[i].c
			rctx, cancel := context.WithTimeout(ctx, m.q.nodeTimeout)
			defer cancel()
			req := wire.FenceRaise{Name: m.name, Token: h.token, Lease: grants[i].lease}
			keys, args := req.Render()
			_, err := wire.DecodeFenceRaise(fenceRaise.Exec(rctx, c.redis(), keys, args))
			done <- raised{i, err}
		}()
	}
	var dropped quorumHolds
	dropped.leases = make([]*Lease, len(grants))
	for range n {
		if r := <-done; r.err != nil {
			dropped.leases[r.i], h.leases[r.i] = h.leases[r.i], nil
		}
	}
	// The grant hands out h.token under each node's write: its release
	// there must close the write's token range at h.token (as a cohort's
	// passes do, owner.passed), not at the node's own token. The release
	// closes the range when the last token is still the range's top as it
	// reads it, and a raise may have written exactly that value (a node
	// token RESERVE - 1 below h.token), or written nothing, the range
	// reaching h.token already: either way, closed at the node's token, a
	// later majority through that node could return a lower token.
	for i, l := range h.leases {
		if l == nil || l.Token() >= h.token {
			continue
		}
		if l.own.lock(ctx) != nil {
			dropped.leases[i], h.leases[i] = l, nil
			continue
		}
		l.own.passed = max(l.own.passed, h.token)
		l.own.unlock()
	}
	dropped.release(ctx, m.q, len(grants))
	return h
}

// majorityDeadline is the time until which a majority of leases is known to
// be held: the majority-th latest of their deadlines. It is zero when fewer
// than a majority are alive.
func majorityDeadline(leases []*Lease, majority int) time.Time {
	var ds []time.Time
	for _, l := range leases {
		if l == nil {
			continue
		}
		select {
		case <-l.Done():
			continue
		default:
		}
		ds = append(ds, l.Deadline())
	}
	if len(ds) < majority {
		return time.Time{}
	}
	slices.SortFunc(ds, func(a, b time.Time) int { return b.Compare(a) })
	return ds[majority-1]
}

// join adds a waiter for m on every node, each starting its node's
// subscription to the lock's channel if it is the first.
func (m *QuorumRWMutex) join(mode Mode) *quorumWait {
	w := &quorumWait{wake: make(chan wait.Source, 1)}
	for _, h := range m.nodes {
		w.waiters = append(w.waiters, h.c.waiters().JoinUnqueued(&h.keys.Keys, waitMode(mode), w.wake))
		w.clients = append(w.clients, h.c)
	}
	return w
}
