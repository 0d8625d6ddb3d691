package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// RunLeaseContext runs the scenarios of Lease.Context: under the Env's
// policy, and on a Mutex beside it.
func RunLeaseContext(t *testing.T, env Env) {
	runScenarios(t, env, []scenario{
		{"ContextEndsOnUnlock", ContextEndsOnUnlock},
		{"MutexContextEndsOnUnlock", MutexContextEndsOnUnlock},
		{"ContextEndsOnLoss", ContextEndsOnLoss},
		{"ContextEndsByDeadline", ContextEndsByDeadline},
		{"ContextEndsOnClose", ContextEndsOnClose},
	})
}

// ContextEndsOnUnlock: a lease's Context is one value, alive while the
// lease is, cancelled by its Unlock with ErrUnlocked as the cause; a
// further hold's Context is its own, and outlives the lease it came from.
func ContextEndsOnUnlock(t *testing.T, env Env) {
	c := env.client(t)
	w := lock(t, c.RWMutex(name(t)), fairrw.Write)
	ctxW := w.Context()
	if ctxW != w.Context() {
		t.Fatal("Context returned two values for one lease")
	}
	r := hold(t, w, fairrw.Read) // a downgrade
	ctxR := r.Context()
	contextAlive(t, ctxW)
	unlock(t, w)
	contextEnded(t, ctxW, hidden.ErrUnlocked)
	contextAlive(t, ctxR)
	unlock(t, r)
	contextEnded(t, ctxR, hidden.ErrUnlocked)
	// Asked for after the end: cancelled already, with the same cause.
	r2 := lock(t, c.RWMutex(name(t)), fairrw.Read)
	unlock(t, r2)
	contextEnded(t, r2.Context(), hidden.ErrUnlocked)
	EventuallyNoKeys(t, env, name(t))
}

// MutexContextEndsOnUnlock: as ContextEndsOnUnlock, for a Mutex and its
// reentrant hold.
func MutexContextEndsOnUnlock(t *testing.T, env Env) {
	c := env.client(t)
	m := c.Mutex(name(t))
	first := lockMutex(t, m)
	again, err := first.Lock(ctx(t))
	if err != nil {
		t.Fatalf("reentrant Lock: %v", err)
	}
	unlock(t, first)
	contextEnded(t, first.Context(), hidden.ErrUnlocked)
	contextAlive(t, again.Context())
	unlock(t, again)
	contextEnded(t, again.Context(), hidden.ErrUnlocked)
	EventuallyNoKeys(t, env, name(t))
}

// ContextEndsOnLoss: when Redis no longer has the hold (its keys were
// deleted), the renewal finds it gone and the Context ends with the
// lease's Err, which wraps ErrLeaseLost; for the Mutex as for the lock.
func ContextEndsOnLoss(t *testing.T, env Env) {
	c := env.client(t, fairrw.WithLeaseTime(300*time.Millisecond))
	leases := []*fairrw.Lease{
		lock(t, c.RWMutex(name(t)+":w"), fairrw.Write),
		lock(t, c.RWMutex(name(t)+":r"), fairrw.Read),
		lockMutex(t, c.Mutex(name(t)+":m")),
	}
	ctxs := make([]context.Context, len(leases))
	for i, l := range leases {
		ctxs[i] = l.Context()
	}
	for _, k := range keysOf(t, env, name(t)) {
		if err := env.Raw.Do(ctx(t), env.Raw.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range leases {
		waitContext(t, ctxs[i], 5*time.Second)
		contextEnded(t, ctxs[i], fairrw.ErrLeaseLost)
		if cause := context.Cause(ctxs[i]); cause != l.Err() {
			t.Fatalf("Context cause %v, want the lease's Err %v", cause, l.Err())
		}
	}
}

// ContextEndsByDeadline: a lease that is not renewed (WithLease) ends its
// Context at its local deadline, as Done, not later.
func ContextEndsByDeadline(t *testing.T, env Env) {
	c := env.client(t)
	const lease = 200 * time.Millisecond
	leases := []*fairrw.Lease{
		lock(t, c.RWMutex(name(t)), fairrw.Write, fairrw.WithLease(lease)),
		lockMutex(t, c.Mutex(name(t)+":m"), fairrw.WithLease(lease)),
	}
	for _, l := range leases {
		lctx := l.Context()
		waitContext(t, lctx, 5*time.Second)
		ended := time.Now()
		if late := ended.Sub(l.Deadline()); late > 150*time.Millisecond {
			t.Fatalf("Context ended %v after the lease's deadline", late)
		}
		if !isClosed(l.Done()) {
			t.Fatal("Context ended while Done is open")
		}
		contextEnded(t, lctx, fairrw.ErrLeaseLost)
	}
	EventuallyNoKeys(t, env, name(t))
}

// ContextEndsOnClose: Close ends every lease's Context with a cause that
// wraps ErrLeaseLost and ErrClosed, also a Context asked for afterwards.
func ContextEndsOnClose(t *testing.T, env Env) {
	c := env.client(t)
	w := lock(t, c.RWMutex(name(t)), fairrw.Write)
	m := lockMutex(t, c.Mutex(name(t)+":m"))
	wctx := w.Context()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, lctx := range []context.Context{wctx, m.Context()} {
		contextEnded(t, lctx, fairrw.ErrLeaseLost)
		contextEnded(t, lctx, fairrw.ErrClosed)
	}
}

// contextAlive fails t if ctx has ended.
func contextAlive(t testing.TB, c context.Context) {
	t.Helper()
	if err := c.Err(); err != nil {
		t.Fatalf("Context ended while the lease is held: %v (cause %v)", err, context.Cause(c))
	}
}

// contextEnded fails t unless ctx was cancelled with a cause that wraps
// want.
func contextEnded(t testing.TB, c context.Context, want error) {
	t.Helper()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Context Err = %v, want context.Canceled", c.Err())
	}
	if cause := context.Cause(c); !errors.Is(cause, want) {
		t.Fatalf("Context cause = %v, want %v", cause, want)
	}
}

// waitContext waits for ctx to end, at most d.
func waitContext(t testing.TB, c context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(d):
		t.Fatalf("Context still alive after %v", d)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
