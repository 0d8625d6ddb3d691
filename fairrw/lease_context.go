package fairrw

import "context"

// Context returns a context that is cancelled when the lease ends, at the
// moment Done closes: unlocked, lost (Redis no longer had the hold, or its
// local deadline passed unconfirmed, so the context is done by that deadline
// even while Redis does not answer), or ended by its Client's Close or
// Shutdown. context.Cause then tells why: the lease's Err (wrapping
// ErrLeaseLost, and ErrClosed when the Client closed), or ErrUnlocked after
// a successful Unlock. Pass it to the work the lock guards, so that the work
// stops when the lock is no longer held.
//
// The context is rooted at context.Background: it carries no values, and no
// deadline (the lease's moves with every renewal: see Deadline), and the ctx
// of the acquire does not cancel it, since that often bounds only the wait.
// It is one value per lease, the same on every call, made on the first call
// (a lease that nobody asks for pays nothing); it starts no goroutine. To
// stop work when either a request or the lease ends, join the two:
//
//	ctx, cancel := context.WithCancelCause(reqCtx)
//	defer cancel(nil)
//	defer context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })()
func (l *Lease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ends.get(l.state == leaseEnded, l.err)
}

// Context returns a context that is cancelled when the quorum lease ends,
// at the moment Done closes, with its Err (or ErrUnlocked after a
// successful Unlock) as the cause; see Lease.Context, whose guarantees it
// shares.
func (l *QuorumLease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ends.get(l.state == leaseEnded, l.err)
}

// endContext is the Context of a lease, guarded by the lease's mutex. It is
// made on first use and cancelled under the same lock that closes Done, so
// that no caller ever sees Done closed and the context alive once both were
// read. (Cancelling under the lock is safe: a cancel runs no code of ours,
// and context.AfterFunc callbacks run on goroutines of their own.)
type endContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// get returns the context, making it on first use: cancelled already, with
// err as the cause, when the lease has ended.
func (e *endContext) get(ended bool, err error) context.Context {
	if e.ctx == nil {
		e.ctx, e.cancel = context.WithCancelCause(context.Background())
		if ended {
			e.cancel(endCause(err))
		}
	}
	return e.ctx
}

// end cancels the context, if one was made, as the lease ends with err (nil:
// unlocked).
func (e *endContext) end(err error) {
	if e.cancel != nil {
		e.cancel(endCause(err))
	}
}

func endCause(err error) error {
	if err == nil {
		return ErrUnlocked
	}
	return err
}
