package locktest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// RunShutdown runs the scenarios of Client.Shutdown under the Env's policy,
// with a Mutex beside its read-write locks.
func RunShutdown(t *testing.T, env Env) {
	runScenarios(t, env, []scenario{
		{"ShutdownReleasesEveryHold", ShutdownReleasesEveryHold},
		{"ShutdownFailsItsWaiters", ShutdownFailsItsWaiters},
		{"ShutdownRacesAcquires", ShutdownRacesAcquires},
		{"ShutdownAfterClose", ShutdownAfterClose},
		{"ShutdownConcurrent", ShutdownConcurrent},
	})
}

// ShutdownReleasesEveryHold: Shutdown ends every lease first (Done, Err and
// Context wrap ErrLeaseLost and ErrClosed) and releases every hold, the
// reentrant and downgraded ones, reads, a WithLease hold and a Mutex's, so
// that waiters in another Client are woken by the releases at once, long
// before the 30s leases would run out. Nothing is left in Redis, and the
// Client is closed.
func ShutdownReleasesEveryHold(t *testing.T, env Env) {
	c, other := env.client(t), env.client(t)
	n := name(t)
	w := lock(t, c.RWMutex(n), fairrw.Write)
	r := lock(t, c.RWMutex(n+":r"), fairrw.Read)
	x := lock(t, c.RWMutex(n+":x"), fairrw.Write, fairrw.WithLease(time.Hour))
	m := lockMutex(t, c.Mutex(n+":m"))
	leases := []*fairrw.Lease{w, hold(t, w, fairrw.Write), hold(t, w, fairrw.Read), r, hold(t, r, fairrw.Read), x, m}
	again, err := m.Lock(ctx(t))
	if err != nil {
		t.Fatalf("reentrant mutex Lock: %v", err)
	}
	leases = append(leases, again)
	waiters := []<-chan result{
		queueUp(t, env, ctx(t), other.RWMutex(n), fairrw.Write),
		queueUp(t, env, ctx(t), other.RWMutex(n+":r"), fairrw.Write),
		queueUp(t, env, ctx(t), other.RWMutex(n+":x"), fairrw.Read),
		mutexAsync(ctx(t), other.Mutex(n+":m")),
	}
	start := time.Now()
	if err := c.Shutdown(ctx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, l := range leases {
		for _, err := range []error{l.Err(), context.Cause(l.Context())} {
			if !isClosed(l.Done()) || !errors.Is(err, fairrw.ErrLeaseLost) || !errors.Is(err, fairrw.ErrClosed) {
				t.Fatalf("%s lease on %s after Shutdown: %v, want ErrLeaseLost and ErrClosed", hidden.Mode(l), hidden.Name(l), err)
			}
		}
	}
	for _, ch := range waiters {
		l := receive(t, ch)
		if wait := time.Since(start); wait > 5*time.Second || hidden.WokenBy(l) == "timer" {
			t.Fatalf("waiter on %s granted %v after Shutdown, woken by %q: not by the release", hidden.Name(l), wait, hidden.WokenBy(l))
		}
		unlock(t, l)
	}
	EventuallyNoKeys(t, env, n)
	if _, err := c.RWMutex(n).TryLock(ctx(t)); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("TryLock after Shutdown: %v, want ErrClosed", err)
	}
	if err := w.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("Unlock after Shutdown: %v, want ErrClosed", err)
	}
	if err := c.Shutdown(ctx(t)); err != nil {
		t.Fatalf("second Shutdown: %v, want the first's nil", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close after Shutdown: %v", err)
	}
}

// ShutdownFailsItsWaiters: a Client's Locks waiting when it shuts down
// return ErrClosed and leave nothing behind (their queue entries go), and
// its own holds are released.
func ShutdownFailsItsWaiters(t *testing.T, env Env) {
	holder, c := env.client(t), env.client(t)
	n := name(t)
	held := lock(t, holder.RWMutex(n), fairrw.Write)
	heldMutex := lockMutex(t, holder.Mutex(n+":m"))
	waiters := []<-chan result{
		queueUp(t, env, ctx(t), c.RWMutex(n), fairrw.Write),
		queueUp(t, env, ctx(t), c.RWMutex(n), fairrw.Read),
		mutexAsync(ctx(t), c.Mutex(n+":m")),
	}
	own := lock(t, c.RWMutex(n+":own"), fairrw.Write)
	if err := c.Shutdown(ctx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, ch := range waiters {
		if r := <-ch; !errors.Is(r.err, fairrw.ErrClosed) {
			t.Fatalf("waiter after Shutdown: %v, want ErrClosed", r.err)
		}
	}
	if !errors.Is(own.Err(), fairrw.ErrClosed) {
		t.Fatalf("held lease after Shutdown: %v, want ErrClosed", own.Err())
	}
	unlock(t, held)
	unlock(t, heldMutex)
	EventuallyNoKeys(t, env, n)
}

// ShutdownRacesAcquires: acquires, further holds and unlocks running while
// the Client shuts down either end before it (their leases are then ended
// and released) or fail with ErrClosed; a grant that lands during Shutdown
// is given back. Afterwards every lock is free at once for another Client,
// and nothing is left in Redis.
func ShutdownRacesAcquires(t *testing.T, env Env) {
	c, other := env.client(t), env.client(t)
	n := name(t)
	names := []string{n + ":a", n + ":b", n + ":c"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- churn(c, names[i%len(names)], i)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if err := c.Shutdown(ctx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, fairrw.ErrClosed) {
			t.Fatalf("a call racing Shutdown: %v, want ErrClosed", err)
		}
	}
	for _, nm := range names {
		unlock(t, granted(t, other.RWMutex(nm), fairrw.Write))
		unlock(t, grantedMutex(t, other.Mutex(nm+":m")))
	}
	EventuallyNoKeys(t, env, n)
}

// churn acquires and releases name (reads, writes, further holds, and the
// Mutex of name+":m") until a call fails, and returns that error.
func churn(c *fairrw.Client, name string, i int) error {
	bg := context.Background()
	for j := 0; ; j++ {
		mode := fairrw.Write
		if (i+j)%3 == 0 {
			mode = fairrw.Read
		}
		var l *fairrw.Lease
		var err error
		if (i+j)%4 == 1 {
			l, err = c.Mutex(name + ":m").Lock(bg)
		} else {
			l, err = Acquire(bg, c.RWMutex(name), mode, j%2 == 0)
		}
		if errors.Is(err, fairrw.ErrNotAcquired) {
			continue
		}
		if err != nil {
			return err
		}
		extra, err := further(bg, l, hidden.Mode(l).(fairrw.Mode))
		if err != nil && !errors.Is(err, fairrw.ErrNotHeld) {
			return err
		}
		if extra != nil {
			if err := extra.Unlock(bg); err != nil && !errors.Is(err, fairrw.ErrNotHeld) {
				return err
			}
		}
		if err := l.Unlock(bg); err != nil && !errors.Is(err, fairrw.ErrNotHeld) {
			return err
		}
	}
}

// ShutdownAfterClose: Close left the holds to expire, so a Shutdown after
// it cannot release them: it says so with ErrClosed.
func ShutdownAfterClose(t *testing.T, env Env) {
	c := env.client(t)
	l := lock(t, c.RWMutex(name(t)), fairrw.Write)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(ctx(t)); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("Shutdown after Close: %v, want ErrClosed", err)
	}
	if err := l.Err(); !errors.Is(err, fairrw.ErrLeaseLost) || !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("lease after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// ShutdownConcurrent: Shutdowns and Closes called together all return once
// the Client is closed, and the holds are released (or, when a Close cut
// the Shutdown short, expire: the lease and the unlock latches here are
// short).
func ShutdownConcurrent(t *testing.T, env Env) {
	c := env.client(t, fairrw.WithLeaseTime(time.Second), fairrw.WithUnlockTimeout(500*time.Millisecond))
	n := name(t)
	lock(t, c.RWMutex(n), fairrw.Write)
	lockMutex(t, c.Mutex(n+":m"))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 3 {
				_ = c.Close()
				return
			}
			// nil, or ErrClosed when the Close began first.
			if err := c.Shutdown(ctx(t)); err != nil && !errors.Is(err, fairrw.ErrClosed) {
				t.Errorf("concurrent Shutdown: %v", err)
			}
		}()
	}
	wg.Wait()
	if _, err := c.RWMutex(n).TryLock(ctx(t)); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("TryLock after Shutdown: %v, want ErrClosed", err)
	}
	EventuallyNoKeys(t, env, n)
}
