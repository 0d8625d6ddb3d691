package wait

import (
	"context"
	"errors"
	"time"
)

// ErrClosed is returned to the waiters of a Client that began closing;
// fairrw.ErrClosed is this same value.
var ErrClosed = errors.New("fairrw: client closed")

// Mode is what a waiter waits for: a read or a write hold, numbered as
// fairrw.Mode numbers them.
type Mode uint8

const (
	// Read is a waiter for a shared hold.
	Read Mode = iota + 1
	// Write is a waiter for an exclusive hold.
	Write
)

// A waiter's own wait: it waits for its group's subscription, sleeps until
// a wake-up or its bound, and takes up a grant delivered to its owner.

// Waiter is one wait in a registry's group: its doorbell, and the grant a
// release delivered to its owner.
type Waiter struct {
	group *Group
	mode  Mode
	owner string
	wake  chan Source // one slot: a doorbell
	busy  bool        // retrying now (guarded by Registry.mu)
	// unqueued: a quorum's waiter, which keeps no place in a fair
	// policy's queue, so no "w:<owner>" message ever names it.
	unqueued bool
	source   Source // what woke it last
	closing  <-chan struct{}
	// granted: a release granted the waiter's owner the write, with token
	// (guarded by Registry.mu); see TakeGrant.
	granted bool
	token   uint64
	grantBy Source
}

// Registry returns the registry that w waits in.
func (w *Waiter) Registry() *Registry { return w.group.registry }

// Source says what woke w last: a wake-up, or its timer.
func (w *Waiter) Source() Source { return w.source }

// AwaitSubscription blocks until the group's subscription is confirmed, so
// that the retry that follows cannot miss a release's message. It gives up
// waiting after bound (the PTTL): the retry is due then anyway.
func (w *Waiter) AwaitSubscription(ctx context.Context, bound time.Duration) error {
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

// Sleep waits for a wake-up, at most bound (shortened while the group's
// subscription is suspect: see NapBound). The waiter is idle meanwhile, so
// that a wake-up goes to it rather than being absorbed.
func (w *Waiter) Sleep(ctx context.Context, bound time.Duration) error {
	bound = w.NapBound(bound)
	w.SetBusy(false)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case src := <-w.wake: // the waker marked it busy
		w.source = src
		return nil
	case <-t.C:
		w.SetBusy(true)
		w.source = Timer
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return ErrClosed
	}
}

// SetBusy marks the waiter as retrying (a wake-up meanwhile is absorbed by
// its next attempt) or idle (asleep: a wake-up goes to it).
func (w *Waiter) SetBusy(busy bool) {
	r := w.group.registry
	r.mu.Lock()
	w.busy = busy
	r.mu.Unlock()
}

// TakeGrant returns the grant a release made to the waiter's owner, if one
// was delivered.
func (w *Waiter) TakeGrant() (token uint64, by Source, ok bool) {
	r := w.group.registry
	r.mu.Lock()
	defer r.mu.Unlock()
	return w.token, w.grantBy, w.granted
}
