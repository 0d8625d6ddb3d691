package fairrw

import (
	"context"
	"fmt"
	"time"
)

// releaseWithin runs the policy's release of one hold of mode by owner o
// (or, with abandon, gives o up), writing st as what o still holds, to a
// definite outcome, bounded by ctx and deadline (zero: by ctx alone, which
// must then carry a deadline or be cancelled: see bounded), retrying lost
// replies with the same request id and stamp (the unlock latch and the
// accept window make that idempotent).
// The latch is deleted afterwards, as Java does, unless a try failed: a
// copy of that try may still reach Redis within the accept window, and
// must find the latch there rather than write an owner's state that is no
// longer true.
//
// With unreachableFails it gives up at once when it cannot connect (no try
// has reached Redis): a quorum's release of a node that is down must not
// hold up the release of the others. Its caller goes on with it in the
// background (Lease.followUp).
//
// A Shutdown cut short stops it too.
func (m *RWMutex) releaseWithin(ctx context.Context, deadline time.Time, o *owner, mode Mode, st ownerState, abandon, unreachableFails bool) (releaseResult, error) {
	return m.send(ctx, deadline, m.newRelease(o, mode, st, abandon), unreachableFails)
}

// A releaseCall is one release request and what its tries so far tell:
// tries of one call share its request id and stamp, so that Redis applies
// it once however many copies reach it.
type releaseCall struct {
	m       *RWMutex
	req     releaseRequest
	reached bool // a try failed after it may have reached Redis
}

// newRelease prepares a release of one hold of mode by owner o (see
// releaseWithin).
func (m *RWMutex) newRelease(o *owner, mode Mode, st ownerState, abandon bool) *releaseCall {
	request := newRequestID()
	return &releaseCall{m: m, req: releaseRequest{
		mode:    mode,
		owner:   o.id,
		request: request,
		latch:   m.policy.unlockLatch(&m.keys, request),
		abandon: abandon,
		state:   st,
		// A read attempt given up may have been granted unseen.
		mayRead: o.read || mode == Read,
		passed:  o.passed,
		// The fast release only if no waiter of this Client is queued
		// behind the hold: that one's queue entry would make it a wasted
		// round trip (a waiter of another Client still may).
		fast:      !abandon && o.fast && o.passed == 0 && o.reserve <= 1 && !m.c.waits.waiting(&m.keys),
		stamp:     time.Now(),
		window:    m.c.acceptWindow(),
		latchTTL:  m.c.acceptWindow(),
		markerTTL: o.markerTTL(),
		queue:     m.c.leaseTime,
		publish:   m.c.publish,
		// A writer this release granted the lock to may wait in this
		// Client: the reply wakes it before the message would.
		grants: m.c.waits,
	}}
}

func (rc *releaseCall) procedure() string {
	if rc.req.abandon {
		return "fairrw.give_back"
	}
	return "fairrw.release"
}

// call sends one try of the release, as bounded runs it.
func (rc *releaseCall) call(ctx context.Context) (releaseResult, error) {
	m := rc.m
	return m.policy.release(ctx, m.c.rdb, &m.keys, &rc.req)
}

// send tries rc until Redis answers it, within ctx and deadline (zero:
// ctx alone; see releaseWithin). A give-up (abandon) is tried for as long
// as ctx lasts: Redis never refuses one as late. Its latch is always
// deleted once answered: a late copy of an earlier try can only remove
// what is gone already.
func (m *RWMutex) send(ctx context.Context, deadline time.Time, rc *releaseCall, unreachableFails bool) (releaseResult, error) {
	var cancel context.CancelFunc
	if deadline.IsZero() {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}
	defer cancel()
	// A Shutdown cut short stops it: boundedHalting cancels ctx then, and
	// the backoff below wakes on halt.
	req := &rc.req
	backoff := newBackoff(minRetryBackoff, maxRetryBackoff)
	restamped := false
	for {
		res, err := boundedHalting[releaseResult](m.c, ctx, cancel, rc)
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
				m.c.janitor.drop(req.latch)
			}
			return res, nil
		}
		rc.reached = rc.reached || !unsent(err)
		if definite(err) || (unreachableFails && !rc.reached) {
			return res, tag(fmt.Sprintf("fairrw: unlock %q: %s", m.keys.name, reason(err)), err)
		}
		if (!req.abandon && time.Since(req.stamp) >= m.c.retryWindow()) || backoff.wait(ctx, m.c.halt.Done()) != nil {
			return res, tag(fmt.Sprintf("fairrw: unlock %q: %s", m.keys.name, reason(err)), err)
		}
	}
}
