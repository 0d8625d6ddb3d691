package fairrw

import "context"

// Context returns a context that is cancelled when the lease ends, at the
// moment Done closes: unlocked, lost (Redis no longer had the hold, or its
// local deadline passed unconfirmed, so the context is done by that deadline
// even while Redis does not answer), or ended by its Client's Close or
// Shutdown. context.Cause then tells why: the lease's Err (wrapping
// ErrLeaseLost, and ErrClosed when the Client closed), or ErrUnlocked after
// a successful Unlock of a lease that had not ended before. Pass it to the
// work the lock guards, so that the work stops when the lock is no longer
// held.
//
// The context is rooted at context.Background: it carries no values, and no
// deadline (the lease's moves with every renewal: see Deadline), and the ctx
// of the acquire does not cancel it, since that often bounds only the wait.
// It is one value per lease, the same on every call, and its Done channel is
// the lease's Done channel; it starts no goroutine. To stop work when either
// a request or the lease ends, use Guard.
func (l *Lease) Context() context.Context { return l.ends.ctx }

// Context returns a context that is cancelled when the quorum lease ends,
// at the moment Done closes, with its Err (or ErrUnlocked after a
// successful Unlock) as the cause; see Lease.Context, whose guarantees it
// shares.
func (l *QuorumLease) Context() context.Context { return l.ends.ctx }

// Guard returns a context derived from ctx that is also cancelled when the
// quorum lease ends, as Lease.Guard does.
func (l *QuorumLease) Guard(ctx context.Context) (context.Context, context.CancelFunc) {
	return guard(ctx, l.Context())
}

// endContext is the Context of a lease, made with the lease. Its Done
// channel is the lease's Done channel, so that nobody can see one ended and
// the other not, in either order and without taking the lease's lock.
// (Cancelling under the lease's lock is safe: a cancel runs no code of ours,
// and context.AfterFunc callbacks run on goroutines of their own.)
type endContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newEndContext() endContext {
	ctx, cancel := context.WithCancelCause(context.Background())
	return endContext{ctx: ctx, cancel: cancel}
}

// end cancels the context, closing the lease's Done, as the lease ends with
// err (nil: unlocked).
func (e *endContext) end(err error) {
	e.cancel(endCause(err))
}

func endCause(err error) error {
	if err == nil {
		return ErrUnlocked
	}
	return err
}
