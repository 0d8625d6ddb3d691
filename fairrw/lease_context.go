package fairrw

import "context"

// Context returns a context cancelled when the lease ends, at the moment Done
// closes, even while Redis does not answer. Its cause is the lease's Err, or
// ErrUnlocked after a successful Unlock. It is one value per lease, with no
// values or deadline, that the acquire's ctx does not cancel.
func (l *Lease) Context() context.Context { return l.ends.ctx }

// Context returns a context cancelled when the quorum lease ends, at the
// moment Done closes, as Lease.Context.
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
