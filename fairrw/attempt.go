package fairrw

import (
	"context"
	"fmt"
	"time"
)

// attemptResult is one acquire attempt carried to a definite outcome.
type attemptResult struct {
	reply   acquireReply
	attempt string    // the attempt id; a grant's hold is released by it
	sent    time.Time // when the attempt was first sent: a grant's lease starts no earlier
	woken   wakeSource
}

// Backoff between retries of one attempt whose reply was lost.
const (
	minRetryBackoff = 5 * time.Millisecond
	maxRetryBackoff = 500 * time.Millisecond
)

// request describes an acquire of mode by this handle, as the owner of the
// acquire's tenure (cfg.owner), but for its attempt id.
func (m *RWMutex) request(mode Mode, cfg acquireConfig) acquireRequest {
	return acquireRequest{
		mode:  mode,
		owner: cfg.owner,
		lease: cfg.lease,
		queue: m.c.leaseTime,
		// A granted attempt's latch only has to outlive retries of that
		// attempt, and must not outlive a short hold by much.
		latchTTL:     min(cfg.lease, m.c.unlockTimeout),
		publish:      m.c.publish,
		syncReplicas: m.c.syncReplicas,
		syncTimeout:  m.c.syncTimeout,
	}
}

// attempt runs one acquire attempt until its outcome is known. With wait,
// a refused attempt queues the caller where the policy keeps a queue. A failure
// whose outcome is unknown (a lost reply, a broken connection) is retried
// with the same attempt id, which the scripts make idempotent. When ctx ends
// first, the attempt is settled so that nothing stays behind in Redis.
//
// A waiter's attempt (tracked) also arms client tracking on the lock key, in
// the same round trip, so that the next change to it wakes the waiter.
func (m *RWMutex) attempt(ctx context.Context, mode Mode, cfg acquireConfig, wait, tracked bool) (attemptResult, error) {
	req := m.request(mode, cfg)
	req.attempt = newRequestID()
	req.wait = wait
	req.tracked = tracked && m.c.tracking && m.keys.tracked != ""
	got := attemptResult{attempt: req.attempt, sent: time.Now()}
	backoff := minRetryBackoff
	// reached: a copy of the attempt may have run in Redis. Until then
	// (every try failed to connect) giving up leaves nothing to settle.
	reached := false
	for {
		reply, err := m.policy.acquire(ctx, m.c.rdb, &m.keys, &req)
		reached = reached || err == nil || !unsent(err)
		if err == nil {
			got.reply = reply
			if reply.aborted { // only a settled attempt is aborted; report it as not granted
				got.reply = acquireReply{wait: time.Millisecond}
			}
			if reply.granted && !time.Now().Before(got.sent.Add(req.lease)) {
				// The attempt outlasted its lease (rueidis retried it through
				// an outage, a failover): the grant may have run out in Redis
				// already, and a Lease from it would be born lost. Give it
				// back; Lock retries with a fresh attempt, TryLock refuses.
				m.settle(ctx, mode, req.owner, req.attempt)
				got.reply = acquireReply{wait: time.Millisecond}
				return got, nil
			}
			if reply.granted && req.syncReplicas > 0 && reply.replicas < req.syncReplicas {
				// A failover now could lose the grant: give it back.
				m.settle(ctx, mode, req.owner, req.attempt)
				return got, fmt.Errorf("%w: %q: %d of %d replicas acknowledged within %v",
					ErrNotReplicated, m.keys.name, reply.replicas, req.syncReplicas, req.syncTimeout)
			}
			return got, nil
		}
		if definite(err) || (cfg.unreachableFails && !reached) {
			return got, fmt.Errorf("fairrw: acquire %q: %w", m.keys.name, err)
		}
		if ctx.Err() != nil || m.c.isClosing() {
			if reached {
				m.settle(ctx, mode, req.owner, req.attempt)
			}
			if ctx.Err() != nil {
				return got, fmt.Errorf("fairrw: acquire %q: %w", m.keys.name, ctx.Err())
			}
			return got, ErrClosed
		}
		if err := sleepCtx(ctx, m.c.closing, backoff); err != nil {
			if reached {
				m.settle(ctx, mode, req.owner, req.attempt)
			}
			return got, m.waitError(err)
		}
		backoff = min(backoff*2, maxRetryBackoff)
	}
}

// settle makes sure an attempt whose outcome the caller will not wait for
// holds nothing: it marks the attempt aborted in Redis, and if the attempt had
// been granted, releases that hold (owner's, the attempt's). It runs detached
// from ctx's cancellation.
func (m *RWMutex) settle(ctx context.Context, mode Mode, owner, attempt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.unlockTimeout)
	defer cancel()
	backoff := minRetryBackoff
	for {
		granted, err := abortAttempt(ctx, m.c, &m.keys, attempt)
		if err == nil {
			if granted {
				_, _ = m.release(ctx, mode, owner, attempt, true, false)
			}
			return
		}
		if definite(err) || sleepCtx(ctx, nil, backoff) != nil {
			return // the attempt latch and any hold expire by themselves
		}
		backoff = min(backoff*2, maxRetryBackoff)
	}
}

// release runs the policy's release of one hold of owner (the owner it was
// granted under, not the handle's current one) to a definite outcome, on a
// context detached from the caller's cancellation and bounded by the unlock
// timeout, retrying lost replies with the same request id (the unlock latch
// makes that idempotent). The latch is deleted afterwards, as Java does.
//
// With unreachableFails it gives up at once when it cannot connect (no try
// has reached Redis): a quorum's release of a node that is down, whose hold
// runs out with its lease, must not hold up the release of the others.
func (m *RWMutex) release(ctx context.Context, mode Mode, owner, attempt string, abort, unreachableFails bool) (releaseResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.unlockTimeout)
	defer cancel()
	req := releaseRequest{
		mode:     mode,
		owner:    owner,
		attempt:  attempt,
		request:  newRequestID(),
		abort:    abort,
		lease:    m.c.leaseTime,
		queue:    m.c.leaseTime,
		latchTTL: m.c.unlockTimeout,
		publish:  m.c.publish,
	}
	backoff := minRetryBackoff
	reached := false
	for {
		res, err := m.policy.release(ctx, m.c.rdb, &m.keys, &req)
		if err == nil {
			m.c.janitor.drop(m.policy.unlockLatch(&m.keys, req.request))
			return res, nil
		}
		reached = reached || !unsent(err)
		if definite(err) || (unreachableFails && !reached) {
			return res, fmt.Errorf("fairrw: unlock %q: %w", m.keys.name, err)
		}
		if serr := sleepCtx(ctx, nil, backoff); serr != nil {
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
