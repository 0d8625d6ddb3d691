package fairrw

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// attemptResult is one acquire attempt carried to a definite outcome.
type attemptResult struct {
	reply acquireReply
	sent  time.Time // when the attempt was first sent: a grant's lease starts no earlier
	// cover, when set, is how long from sent the grant is held at least
	// (a grant made on the owner's behalf); otherwise the lease asked for.
	cover time.Duration
	woken wakeSource
}

// Backoff between retries of one attempt whose reply was lost.
const (
	minRetryBackoff = 5 * time.Millisecond
	maxRetryBackoff = 500 * time.Millisecond
)

// errNoAnswer is an attempt that got no answer within the retry window:
// its outcome is unknown (owner.unsure says so), and a copy of it may still
// take the lock until the accept window ends.
var errNoAnswer = errors.New("no answer from Redis")

// request describes an acquire of mode by owner o.
func (m *RWMutex) request(o *owner, mode Mode, cfg acquireConfig) acquireRequest {
	return acquireRequest{
		mode:         mode,
		owner:        o.id,
		lease:        cfg.lease,
		queue:        m.c.leaseTime,
		window:       m.c.acceptWindow(),
		publish:      m.c.publish,
		syncReplicas: m.c.syncReplicas,
		syncTimeout:  m.c.syncTimeout,
		notify:       cfg.notify,
	}
}

// attempt runs one acquire attempt of owner o until its outcome is known.
// With wait, a refused attempt queues the caller where the policy keeps a
// queue; further > 0 takes a further hold (see acquireRequest). A failure
// whose outcome is unknown (a lost reply, a broken connection) is retried
// with the same stamp for the retry window, which the scripts make
// idempotent; after that, or when ctx ends first, it returns an error and
// marks the owner unsure: the caller must give it up unless it goes on
// acquiring as the same owner.
//
// A waiter's attempt (tracked) also arms client tracking on the lock key, in
// the same round trip, so that the next change to it wakes the waiter.
func (m *RWMutex) attempt(ctx context.Context, o *owner, mode Mode, cfg acquireConfig, further int, wait, tracked bool) (attemptResult, error) {
	req := m.request(o, mode, cfg)
	req.further = further
	o.read = o.read || mode == Read // before sending: its outcome may stay unknown
	req.wait = wait
	req.tracked = tracked && m.c.tracking && m.keys.tracked != ""
	got := attemptResult{sent: time.Now()}
	req.stamp = got.sent
	tctx, cancel := context.WithDeadline(ctx, got.sent.Add(m.c.retryWindow()))
	defer cancel()
	defer context.AfterFunc(m.c.halt, cancel)() // a Shutdown cut short stops it
	backoff := minRetryBackoff
	for {
		reply, err := m.policy.acquire(tctx, m.c.rdb, &m.keys, &req)
		if err == nil {
			o.queued = o.queued || (wait && m.policy.queued() && !reply.granted)
			return m.answered(got, reply, &req)
		}
		if !unsent(err) && !definite(err) { // a definite error changed nothing
			o.unsure = true
		}
		if definite(err) || (cfg.unreachableFails && !o.unsure) {
			return got, fmt.Errorf("fairrw: acquire %q: %w", m.keys.name, err)
		}
		switch {
		case ctx.Err() != nil:
			return got, fmt.Errorf("fairrw: acquire %q: %w", m.keys.name, ctx.Err())
		case m.c.isClosing():
			return got, ErrClosed
		case tctx.Err() != nil:
			return got, fmt.Errorf("fairrw: acquire %q: %w within %v: %w", m.keys.name, errNoAnswer, m.c.retryWindow(), err)
		}
		if err := sleepCtx(tctx, m.c.closing, backoff); err != nil && tctx.Err() == nil {
			return got, m.waitError(err)
		}
		backoff = min(backoff*2, maxRetryBackoff)
	}
}

// answered turns an attempt's reply into its outcome.
func (m *RWMutex) answered(got attemptResult, reply acquireReply, req *acquireRequest) (attemptResult, error) {
	got.reply = reply
	switch {
	case reply.void:
		if time.Since(got.sent) < m.c.retryWindow() {
			// Redis found the attempt older than the accept window while
			// this clock says it is younger than the retry window.
			return got, fmt.Errorf("%w: %q: Redis's clock is ahead of this machine's by more than %v", ErrClockSkew, m.keys.name, m.c.acceptWindow()-m.c.retryWindow())
		}
		// It reached Redis too late and took nothing: a refusal.
		got.reply = acquireReply{wait: time.Millisecond}
	case reply.gone:
		return got, fmt.Errorf("%w: %q: the owner's hold is gone from Redis", ErrNotHeld, m.keys.name)
	case reply.granted && !time.Now().Before(got.sent.Add(req.lease)):
		// The attempt outlasted its lease (rueidis retried it through an
		// outage, a failover): the grant may have run out in Redis
		// already, and a Lease from it would be born lost.
		return got, errOutlasted
	case reply.granted && req.syncReplicas > 0 && reply.replicas < req.syncReplicas:
		// A failover now could lose the grant.
		return got, fmt.Errorf("%w: %q: %d of %d replicas acknowledged within %v",
			ErrNotReplicated, m.keys.name, reply.replicas, req.syncReplicas, req.syncTimeout)
	}
	return got, nil
}

// errOutlasted is a grant answered after its lease ran out. The owner is
// given up (which releases the grant); Lock tries again as a new owner,
// TryLock and TryRLock return ErrNotAcquired.
var errOutlasted = fmt.Errorf("%w: the grant was answered after its lease ran out", ErrNotAcquired)

// release runs the policy's release of one hold of mode by owner o (or, with
// abandon, gives o up), writing st as what o still holds, to a definite
// outcome: on a context detached from the caller's cancellation and
// bounded by timeout, retrying lost replies with the same request id and
// stamp (the unlock latch and the accept window make that idempotent). The
// latch is deleted afterwards, as Java does, unless a try failed: a copy of
// that try may still reach Redis within the accept window, and must find
// the latch there rather than write an owner's state that is no longer
// true.
//
// With unreachableFails it gives up at once when it cannot connect (no try
// has reached Redis): a quorum's release of a node that is down, whose hold
// runs out with its lease, must not hold up the release of the others.
func (m *RWMutex) release(ctx context.Context, o *owner, mode Mode, st ownerState, abandon, unreachableFails bool, timeout time.Duration) (releaseResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return m.releaseWithin(ctx, o, mode, st, abandon, unreachableFails)
}

// releaseWithin is release bounded by ctx alone (Shutdown's), and also
// stopped by a Shutdown cut short, where rueidis can stop a command: it
// honours a cancellation only for a command queued behind others on its
// connection, and a deadline (the bound that ctx must carry) everywhere,
// also in the handshake of a connection it makes again.
func (m *RWMutex) releaseWithin(ctx context.Context, o *owner, mode Mode, st ownerState, abandon, unreachableFails bool) (releaseResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.c.halt, cancel)()
	req := releaseRequest{
		mode:    mode,
		owner:   o.id,
		request: newRequestID(),
		abandon: abandon,
		state:   st,
		// A read attempt given up may have been granted unseen.
		mayRead:   o.read || mode == Read,
		stamp:     time.Now(),
		window:    m.c.acceptWindow(),
		latchTTL:  m.c.acceptWindow(),
		markerTTL: m.c.giveUpWindow(),
		queue:     m.c.leaseTime,
		publish:   m.c.publish,
		// A writer this release granted the lock to may wait in this
		// Client: the reply wakes it before the message would.
		granted: func(grantee string, token uint64) { m.c.waits.deliver(&m.keys, grantee, token) },
	}
	backoff := minRetryBackoff
	reached := false
	for {
		res, err := m.policy.release(ctx, m.c.rdb, &m.keys, &req)
		if err == nil {
			if !reached {
				m.c.janitor.drop(m.policy.unlockLatch(&m.keys, req.request))
			}
			return res, nil
		}
		reached = reached || !unsent(err)
		if definite(err) || (unreachableFails && !reached) {
			return res, fmt.Errorf("fairrw: unlock %q: %w", m.keys.name, err)
		}
		if time.Since(req.stamp) >= m.c.retryWindow() || sleepCtx(ctx, nil, backoff) != nil {
			return res, fmt.Errorf("fairrw: unlock %q: %w", m.keys.name, err)
		}
		backoff = min(backoff*2, maxRetryBackoff)
	}
}

// sleepCtx sleeps for d, or returns early with ctx's error or ErrClosed.
func sleepCtx(ctx context.Context, closing <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closing:
		return ErrClosed
	}
}
