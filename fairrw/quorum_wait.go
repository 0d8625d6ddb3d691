package fairrw

import (
	"context"
	"errors"
	"time"

	"github.com/fairrw/rwlock/internal/wait"
)

// quorumWait is a quorum waiter: one waiter in each node Client's wait
// registry, all ringing one doorbell, so that a release on any node (its
// pub/sub message, or an invalidation of its lock key) wakes the quorum
// waiter for its next round.
type quorumWait struct {
	waiters []*wait.Waiter
	wake    chan wait.Source // the nodes' shared doorbell
	clients []*Client
}

// leave removes the waiter from every node.
func (w *quorumWait) leave() {
	for _, x := range w.waiters {
		x.Registry().Leave(x)
	}
}

// within returns ctx, also ended (with ErrClosed as its cause) when any
// node's Client begins closing, and the function that releases it.
func (w *quorumWait) within(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stops := make([]func() bool, 0, len(w.clients))
	for _, c := range w.clients {
		stops = append(stops, context.AfterFunc(c.closingContext(), func() { cancel(ErrClosed) }))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// whyEnded says why a wait's context (from within) ended.
func whyEnded(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), ErrClosed) {
		return ErrClosed
	}
	return ctx.Err()
}

// pause waits d, ignoring wake-ups: after a round that split the nodes
// with other waiters, a random pause lets one of them win the next.
func (w *quorumWait) pause(ctx context.Context, d time.Duration) error {
	ctx, release := w.within(ctx)
	defer release()
	if wait.Sleep(ctx, nil, d) != nil {
		return whyEnded(ctx)
	}
	return nil
}

// awaitSubscriptions waits until every node confirmed its subscription, or
// bound has passed: a node that is down never confirms, and the next round
// is due then anyway.
func (w *quorumWait) awaitSubscriptions(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for _, x := range w.waiters {
		if err := x.AwaitSubscription(ctx, max(time.Until(deadline), 0)); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits for a wake-up on any node, at most bound, and says what woke
// it. The waiters are idle meanwhile, so that wake-ups go to them rather
// than being absorbed.
func (w *quorumWait) sleep(ctx context.Context, bound time.Duration) (wait.Source, error) {
	for _, x := range w.waiters {
		x.SetBusy(false)
	}
	defer func() { // retrying now: a wake-up meanwhile is absorbed
		for _, x := range w.waiters {
			x.SetBusy(true)
		}
	}()
	for _, x := range w.waiters {
		bound = x.NapBound(bound) // shorter while a node's subscription is suspect
	}
	ctx, release := w.within(ctx)
	defer release()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case src := <-w.wake:
		return src, nil
	case <-t.C:
		return wait.Timer, nil
	case <-ctx.Done():
		return wait.None, whyEnded(ctx)
	}
}
