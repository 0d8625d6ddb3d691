package fairrw

import (
	"context"
	"sync"
	"time"
)

// Work that must still happen after its caller has gone (a grant that
// landed after a cancelled acquire, a release whose answer has not come)
// goes on here, owned by the Client: started at once, retried until Redis
// confirms it or it is moot (whatever it would remove has run out in
// Redis), counted in the fairrw.background.pending metric and logged when
// it outlives its caller. Shutdown waits for it within its ctx; Close stops
// it (what is left then expires with its lease).

// cleanupGrace is how long a call whose ctx has ended still waits, in the
// caller's goroutine, for the clean-up it leaves: on a Redis that answers,
// the clean-up is done before the call returns; on one that does not, the
// call returns this late at most, and the clean-up goes on in the
// background.
const cleanupGrace = 20 * time.Millisecond

// followUpMaxBackoff bounds the pause between two background tries: once
// Redis answers again, what was left is done within it.
const followUpMaxBackoff = 250 * time.Millisecond

// giveBack gives up owner o after an acquire of mode (asking for lease)
// that ends without a Lease: cancelled, closed, failed, or granted too late
// to be used. One release with the abandon flag marks the owner given up
// (no copy of its attempts takes anything from then on), releases whatever
// hold it was granted meanwhile, and withdraws its queue entries; Redis
// applies all of it at once, so whenever it runs, nothing of o stays. A
// give-up is never refused as stale (see lua/common.lua): it only removes,
// and o is never used again.
//
// It is tried for cleanupGrace, then in the background until Redis answers,
// or until it is moot: a copy of o's attempts takes nothing after the
// accept window, and what one took then lasts a lease at most.
func (m *RWMutex) giveBack(o *owner, mode Mode, lease time.Duration) {
	rc := m.newRelease(o, mode, ownerState{}, true) // one request, however many tries
	try := func(ctx context.Context) bool {
		_, err := m.send(ctx, rc, false)
		return err == nil || definite(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupGrace)
	done := try(ctx)
	cancel()
	if done {
		return
	}
	moot := time.Now().Add(m.c.acceptWindow() + max(lease, m.c.leaseTime) + LeaseMargin)
	m.c.followUp(m, "give back", moot, try)
}

// followUp retries try in the background, with a growing pause, until it
// reports done, until moot, or until the Client closes. Each try is given a
// context bounded by the unlock timeout, which also ends when the Client
// closes.
func (c *Client) followUp(m *RWMutex, what string, moot time.Time, try func(ctx context.Context) bool) {
	c.background.run(func(ctx context.Context) {
		c.tel.background(1)
		defer c.tel.background(-1)
		c.tel.log.Warn("fairrw: Redis did not confirm in time; going on in the background", "lock", m.keys.name, "what", what, "until", moot)
		backoff := minRetryBackoff
		once := func() bool {
			ctx, cancel := context.WithTimeout(ctx, c.unlockTimeout)
			defer cancel()
			return try(ctx)
		}
		for time.Now().Before(moot) {
			if once() {
				c.tel.log.Info("fairrw: confirmed in the background", "lock", m.keys.name, "what", what)
				return
			}
			if sleepCtx(ctx, nil, backoff) != nil {
				return
			}
			backoff = min(backoff*2, followUpMaxBackoff)
		}
		c.tel.log.Warn("fairrw: not confirmed, and moot: what it would change has run out in Redis", "lock", m.keys.name, "what", what)
	})
}

// bounded runs f and returns its result, or ctx's error as soon as ctx
// ends, whichever comes first: rueidis can hold a command past its
// context (a second caller waits for a connection being made again, with
// no regard for its own context), and no call may outlive its caller's
// deadline. f runs on a goroutine of the Client's, and must itself end
// soon after ctx does (rueidis ends a command at its context's deadline).
func bounded[T any](c *Client, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	if ctx.Done() == nil {
		return f(ctx)
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	if !c.background.run(func(context.Context) {
		v, err := f(ctx)
		ch <- result{v, err}
	}) {
		return f(ctx) // the Client closed: Close waits for this call
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// tasks are a Client's background work: Shutdown waits for them, Close
// stops them and waits.
type tasks struct {
	mu     sync.Mutex
	closed bool
	n      int             // tasks under way
	idle   []chan struct{} // closed when n drops to 0
	ctx    context.Context // ends when the tasks are closed
	stop   context.CancelFunc
}

func newTasks() *tasks {
	ctx, stop := context.WithCancel(context.Background())
	return &tasks{ctx: ctx, stop: stop}
}

// run starts f in its own goroutine, unless the tasks were closed (it then
// reports false); f must return soon after its ctx ends.
func (t *tasks) run(f func(ctx context.Context)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	go func() {
		defer t.done()
		f(t.ctx)
	}()
	return true
}

func (t *tasks) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		for _, ch := range t.idle {
			close(ch)
		}
		t.idle = nil
	}
}

// wait waits until no task is under way, or for ctx to end.
func (t *tasks) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.idle = append(t.idle, ch)
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops every task and waits for them; no task starts afterwards.
func (t *tasks) close() {
	t.mu.Lock()
	t.closed = true
	t.stop()
	t.mu.Unlock()
	_ = t.wait(context.Background())
}
