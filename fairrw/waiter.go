package fairrw

import (
	"context"
	"time"
)

// A waiter's own wait: it waits for its group's subscription, sleeps until
// a wake-up or its bound, and takes up a grant delivered to its owner.

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

func (w *waiter) registry() *waitRegistry { return w.group.registry }

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

// setBusy marks the waiter as retrying (a wake-up meanwhile is absorbed by
// its next attempt) or idle (asleep: a wake-up goes to it).
func (w *waiter) setBusy(busy bool) {
	r := w.registry()
	r.mu.Lock()
	w.busy = busy
	r.mu.Unlock()
}

// takeGrant returns the grant a release made to the waiter's owner, if one
// was delivered.
func (w *waiter) takeGrant() (token uint64, by wakeSource, ok bool) {
	r := w.registry()
	r.mu.Lock()
	defer r.mu.Unlock()
	return w.token, w.grantBy, w.granted
}
