package fairrw

import (
	"context"
	"fmt"
	"time"
)

// releaseWithin runs the policy's release of one hold of mode by owner o
// (or, with abandon, gives o up), writing st as what o still holds, to a
// definite outcome, bounded by ctx (which must carry a deadline or be
// cancelled: see bounded), retrying lost replies with the same request id
// and stamp (the unlock latch and the accept window make that idempotent).
// The latch is deleted afterwards, as Java does, unless a try failed: a
// copy of that try may still reach Redis within the accept window, and
// must find the latch there rather than write an owner's state that is no
// longer true.
//
// With unreachableFails it gives up at once when it cannot connect (no try
// has reached Redis): a quorum's release of a node that is down, whose hold
// runs out with its lease, must not hold up the release of the others.
//
// A Shutdown cut short stops it too.
func (m *RWMutex) releaseWithin(ctx context.Context, o *owner, mode Mode, st ownerState, abandon, unreachableFails bool) (releaseResult, error) {
	return m.send(ctx, m.newRelease(o, mode, st, abandon), unreachableFails)
}

// A releaseCall is one release request and what its tries so far tell:
// tries of one call share its request id and stamp, so that Redis applies
// it once however many copies reach it.
type releaseCall struct {
	req     releaseRequest
	reached bool // a try failed after it may have reached Redis
}

// newRelease prepares a release of one hold of mode by owner o (see
// releaseWithin).
func (m *RWMutex) newRelease(o *owner, mode Mode, st ownerState, abandon bool) *releaseCall {
	return &releaseCall{req: releaseRequest{
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
	}}
}

// send tries rc until Redis answers it, within ctx (see releaseWithin). A
// give-up (abandon) is tried for as long as ctx lasts: Redis never refuses
// one as late. Its latch is always deleted once answered: a late copy of
// an earlier try can only remove what is gone already.
func (m *RWMutex) send(ctx context.Context, rc *releaseCall, unreachableFails bool) (releaseResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.c.halt, cancel)()
	req := &rc.req
	backoff := minRetryBackoff
	restamped := false
	for {
		res, err := bounded(m.c, ctx, func(ctx context.Context) (releaseResult, error) {
			return m.policy.release(ctx, m.c.rdb, &m.keys, req)
		})
		if err == nil && res == releaseStale {
			// Redis refused a copy that reached it after its window (it
			// was paused, or the copy stalled): nothing was changed, and
			// any other copy of this stamp is refused too. Send it again
			// with a new stamp, under the same request id.
			if restamped && time.Since(req.stamp) < m.c.retryWindow() {
				return res, fmt.Errorf("%w: %q: Redis's clock is ahead of this machine's by more than %v", ErrClockSkew, m.keys.name, m.c.acceptWindow())
			}
			req.stamp, restamped = time.Now(), true
			continue
		}
		if err == nil {
			if !rc.reached || req.abandon {
				m.c.janitor.drop(m.policy.unlockLatch(&m.keys, req.request))
			}
			return res, nil
		}
		rc.reached = rc.reached || !unsent(err)
		if definite(err) || (unreachableFails && !rc.reached) {
			return res, tag(fmt.Sprintf("fairrw: unlock %q: %s", m.keys.name, reason(err)), err)
		}
		if (!req.abandon && time.Since(req.stamp) >= m.c.retryWindow()) || sleepCtx(ctx, nil, backoff) != nil {
			return res, tag(fmt.Sprintf("fairrw: unlock %q: %s", m.keys.name, reason(err)), err)
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
