package fairrw

import (
	"context"
	"reflect"
	"time"
)

// quorumWait is a quorum waiter: one waiter in each node Client's wait
// registry, so that a release on any node (its pub/sub message, or an
// invalidation of its lock key) wakes the quorum waiter for its next round.
type quorumWait struct {
	waiters []*waiter
	closers []<-chan struct{}
}

// join adds a waiter for m on every node, each starting its node's
// subscription to the lock's channel if it is the first.
func (m *QuorumRWMutex) join(mode Mode) *quorumWait {
	w := &quorumWait{}
	for _, h := range m.nodes {
		x := h.c.waits.joinUnqueued(&h.keys, h.policy, mode)
		w.waiters = append(w.waiters, x)
		w.closers = append(w.closers, h.c.closing)
	}
	return w
}

// leave removes the waiter from every node.
func (w *quorumWait) leave() {
	for _, x := range w.waiters {
		x.registry().leave(x)
	}
}

// pause waits d, ignoring wake-ups: after a round that split the nodes
// with other waiters, a random pause lets one of them win the next.
func (w *quorumWait) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	_, err := w.selectEnd(ctx, w.cases(ctx, t.C, false))
	return err
}

// awaitSubscriptions waits until every node confirmed its subscription, or
// bound has passed: a node that is down never confirms, and the next round
// is due then anyway.
func (w *quorumWait) awaitSubscriptions(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for _, x := range w.waiters {
		if err := x.awaitSubscription(ctx, max(time.Until(deadline), 0)); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits for a wake-up on any node, at most bound. The waiters are idle
// meanwhile, so that wake-ups go to them rather than being absorbed.
func (w *quorumWait) sleep(ctx context.Context, bound time.Duration) (wakeSource, error) {
	for _, x := range w.waiters {
		x.setBusy(false)
	}
	defer func() { // retrying now: a wake-up meanwhile is absorbed
		for _, x := range w.waiters {
			x.setBusy(true)
		}
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	return w.selectEnd(ctx, w.cases(ctx, t.C, true))
}

// selectEnd waits for one of cases (built by cases) and says why it ended:
// an error, or what woke it (a doorbell's source, or the timer).
func (w *quorumWait) selectEnd(ctx context.Context, cases []reflect.SelectCase) (wakeSource, error) {
	chosen, v, _ := reflect.Select(cases)
	switch {
	case chosen < len(w.closers):
		return wakeNone, ErrClosed
	case chosen == len(w.closers):
		return wakeNone, ctx.Err()
	case chosen == len(w.closers)+1:
		return wakeTimer, nil
	default:
		return v.Interface().(wakeSource), nil
	}
}

// cases returns the receive cases of a sleep: every node's closing
// channel, then ctx, the timer, and with doorbells every node's doorbell.
func (w *quorumWait) cases(ctx context.Context, timer <-chan time.Time, doorbells bool) []reflect.SelectCase {
	recv := func(ch any) reflect.SelectCase {
		return reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	var cases []reflect.SelectCase
	for _, c := range w.closers {
		cases = append(cases, recv(c))
	}
	cases = append(cases, recv(ctx.Done()), recv(timer))
	if doorbells {
		for _, x := range w.waiters {
			cases = append(cases, recv(x.wake))
		}
	}
	return cases
}
