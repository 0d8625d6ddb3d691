package fairrw

import (
	"context"
	"sync"
	"sync/atomic"
)

// endContext is the Context of a lease. Its Done channel is the lease's
// Done channel, so that nobody can see one ended and the other not, in
// either order and without taking the lease's lock once it is made.
// (Cancelling under the lease's lock is safe: a cancel runs no code of
// ours, and context.AfterFunc callbacks run on goroutines of their own.)
//
// It is made the first time it is asked for (Done, Context, Guard): most
// leases are unlocked with nobody watching, and a context costs every
// acquire two allocations. It is made and ended under the lease's lock, so
// one made after the lease ended is made cancelled, with the same cause.
type endContext struct {
	made  atomic.Pointer[madeContext]
	ended bool  // under the lease's lock
	cause error // the cause it ended with, once ended
}

type madeContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// get returns the context, making it under mu, the lease's lock, if it is
// not made yet. Call it without mu held.
func (e *endContext) get(mu *sync.Mutex) context.Context {
	if m := e.made.Load(); m != nil {
		return m.ctx
	}
	mu.Lock()
	defer mu.Unlock()
	if m := e.made.Load(); m != nil {
		return m.ctx
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if e.ended {
		cancel(e.cause)
	}
	e.made.Store(&madeContext{ctx: ctx, cancel: cancel})
	return ctx
}

// end cancels the context, closing the lease's Done, as the lease ends with
// err (nil: unlocked). Call it once, with the lease's lock held.
func (e *endContext) end(err error) {
	e.ended, e.cause = true, endCause(err)
	if m := e.made.Load(); m != nil {
		m.cancel(e.cause)
	}
}

func endCause(err error) error {
	if err == nil {
		return errUnlocked
	}
	return err
}
