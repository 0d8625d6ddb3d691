package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// The Mutex suite: Redisson's RLock tests, as behaviours of fairrw.Mutex,
// with the hash that a Java client would see checked through env.Raw. A
// Mutex ignores the Client's policy; env.Policy is the read-write lock it
// must refuse to share a name with.

// RunMutex runs every Mutex scenario as a subtest.
func RunMutex(t *testing.T, env Env) {
	runScenarios(t, env, []scenario{
		{"MutexExcludes", MutexExcludes},
		{"MutexHammer", MutexHammer},
		{"MutexReentrant", MutexReentrant},
		{"MutexUnlockTwice", MutexUnlockTwice},
		{"MutexCancelledWaitLeavesNothing", MutexCancelledWaitLeavesNothing},
		{"MutexExplicitLeaseExpires", MutexExplicitLeaseExpires},
		{"MutexShorterHoldNeverShortens", MutexShorterHoldNeverShortens},
		{"MutexWatchdogKeepsAlive", MutexWatchdogKeepsAlive},
		{"MutexDeadClientFrees", MutexDeadClientFrees},
		{"MutexUnlockByOtherOwnerFails", MutexUnlockByOtherOwnerFails},
		{"MutexForceUnlock", MutexForceUnlock},
		{"MutexFencingTokens", MutexFencingTokens},
		{"MutexPolicyMismatch", MutexPolicyMismatch},
		{"MutexSharedHandleExcludes", MutexSharedHandleExcludes},
		{"MutexFurtherHoldsEach", MutexFurtherHoldsEach},
	})
}

// MutexExcludes: a held mutex refuses every other owner, on its own handle,
// in its client and in another; a Lock waiting for it, in either, is granted after the unlock.
func MutexExcludes(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	for _, waiter := range []*fairrw.Client{c1, c2} {
		n := name(t)
		m := c1.Mutex(n)
		held := lockMutex(t, m)
		mutexHash(t, env, n, map[string]string{held.Owner(): "1"})
		refusedMutex(t, m) // the holder's own handle is another owner
		refusedMutex(t, c1.Mutex(n))
		refusedMutex(t, c2.Mutex(n))
		waiting := mutexAsync(ctx(t), waiter.Mutex(n))
		blocked(t, waiting)
		unlock(t, held)
		got := receive(t, waiting)
		mutexHash(t, env, n, map[string]string{got.Owner(): "1"})
		unlock(t, got)
		EventuallyNoKeys(t, env, n)
	}
}

// MutexHammer is sync's mutex hammer over Redis: owners on two clients add
// to a shared counter under the mutex, each checking that it is alone.
func MutexHammer(t *testing.T, env Env) {
	clients := []*fairrw.Client{env.client(t), env.client(t)}
	mutexHammer(t, env, 6, 10, func(i int) *fairrw.Mutex { return clients[i%2].Mutex(name(t)) })
}

// mutexHammer runs workers goroutines of rounds hammer rounds, goroutine i
// on handle(i), and then checks that nothing is left.
func mutexHammer(t *testing.T, env Env, workers, rounds int, handle func(i int) *fairrw.Mutex) {
	inside := make(chan struct{}, workers)
	errs := make(chan error, workers)
	c := ctx(t)
	for i := range workers {
		m := handle(i)
		go func() {
			for range rounds {
				if err := hammerMutexRound(c, m, inside); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var failed error
	for range workers {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		t.Fatal(failed)
	}
	EventuallyNoKeys(t, env, name(t))
}

func hammerMutexRound(c context.Context, m *fairrw.Mutex, inside chan struct{}) error {
	l, err := m.Lock(c)
	if err != nil {
		return err
	}
	inside <- struct{}{}
	if n := len(inside); n != 1 {
		return errors.New("mutex holder not alone: " + itoa(int64(n)) + " inside")
	}
	time.Sleep(time.Millisecond)
	<-inside
	return l.Unlock(c)
}

// MutexReentrant: the holder locks again from its Lease (Lease.Lock); the
// hash counts the owner's holds ("2", then "1"), the further Lock sets the
// PTTL back to its lease (as Java's PEXPIRE, the longest live hold), keeps
// the owner's token, and the hash goes with the last unlock. The handle is
// no owner: its own TryLock is refused. A Mutex Lease has no read mode.
func MutexReentrant(t *testing.T, env Env) {
	c := env.client(t)
	n := name(t)
	m, other := c.Mutex(n), c.Mutex(n)
	first := lockMutex(t, m)
	mutexHash(t, env, n, map[string]string{first.Owner(): "1"})
	time.Sleep(700 * time.Millisecond) // the PTTL runs down; no renewal before lease/3 = 10s
	before := rawPTTL(t, env, n)
	second := hold(t, first, fairrw.Write)
	after := rawPTTL(t, env, n)
	if second.Token() != first.Token() {
		t.Fatalf("further Lock: token %d, want the holder's %d", second.Token(), first.Token())
	}
	mutexHash(t, env, n, map[string]string{first.Owner(): "2"})
	if after <= before || after > hidden.LeaseTime+hidden.LeaseMargin {
		t.Fatalf("PTTL %v before the further Lock, %v after; want it set back to the lease %v (and LeaseMargin)", before, after, hidden.LeaseTime)
	}
	if l, err := first.RLock(ctx(t)); !errors.Is(err, fairrw.ErrInvalidOption) || l != nil {
		t.Fatalf("RLock from a Mutex Lease: %v, %v; want ErrInvalidOption", l, err)
	}
	mutexHash(t, env, n, map[string]string{first.Owner(): "2"})
	refusedMutex(t, other)
	refusedMutex(t, m)
	unlock(t, second)
	mutexHash(t, env, n, map[string]string{first.Owner(): "1"})
	alive(t, first)
	refusedMutex(t, other)
	unlock(t, first)
	if rawExists(t, env, n) {
		t.Fatalf("hash %s still exists after the last unlock", n)
	}
	unlock(t, grantedMutex(t, other))
	EventuallyNoKeys(t, env, n)
}

// MutexUnlockTwice: a lease is unlocked once; its second Unlock is
// ErrNotHeld and releases no other hold of the same owner; it takes no
// further hold.
func MutexUnlockTwice(t *testing.T, env Env) {
	c := env.client(t)
	n := name(t)
	m, other := c.Mutex(n), c.Mutex(n)
	first := lockMutex(t, m)
	second := hold(t, first, fairrw.Write)
	unlock(t, first)
	if err := first.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	if err := first.Err(); err != nil {
		t.Fatalf("Err after Unlock: %v, want nil", err)
	}
	if l, err := first.Lock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) || l != nil {
		t.Fatalf("Lock from an unlocked Lease: %v, %v; want ErrNotHeld", l, err)
	}
	mutexHash(t, env, n, map[string]string{second.Owner(): "1"})
	refusedMutex(t, other)
	unlock(t, second)
	EventuallyNoKeys(t, env, n)
}

// MutexCancelledWaitLeavesNothing: a Lock whose ctx ends returns an error
// wrapping ctx.Err(), holds nothing and writes nothing: the holder's hash
// is as it was, and nothing is left once it unlocks.
func MutexCancelledWaitLeavesNothing(t *testing.T, env Env) {
	c := env.client(t)
	n := name(t)
	held := lockMutex(t, c.Mutex(n))
	cctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	l, err := c.Mutex(n).Lock(cctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || l != nil {
		t.Fatalf("Lock with an expiring ctx: %v, %v; want DeadlineExceeded", l, err)
	}
	cctx, cancel = context.WithCancel(context.Background())
	waiting := mutexAsync(cctx, c.Mutex(n))
	blocked(t, waiting)
	cancel()
	if r := <-waiting; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Lock: %v, want context.Canceled", r.err)
	}
	mutexHash(t, env, n, map[string]string{held.Owner(): "1"})
	unlock(t, held)
	EventuallyNoKeys(t, env, n)
}

// MutexSharedHandleExcludes: goroutines sharing one Mutex handle exclude
// each other (every Lock is a new owner), as on a sync.Mutex.
func MutexSharedHandleExcludes(t *testing.T, env Env) {
	m := env.client(t).Mutex(name(t))
	mutexHammer(t, env, 8, 10, func(int) *fairrw.Mutex { return m })
}

// MutexFurtherHoldsEach is FurtherHoldsEach for the Mutex: three holds of
// one owner with a long, a short and the watchdog's lease, released in every
// order, never shorten each other, and the mutex is free at once after the
// last live one.
func MutexFurtherHoldsEach(t *testing.T, env Env) {
	w, watched := watchStalls(t, env.Raw)
	c := env.client(t, fairrw.WithLeaseTime(furtherWatchdog), watched)
	for _, order := range orders {
		// The orders mostly wait for leases: side by side, each on its own lock.
		o := itoa(int64(order[0]*100 + order[1]*10 + order[2]))
		t.Run(o, func(t *testing.T) {
			t.Parallel()
			base := name(t) + ":" + o
			w.retried(t, furtherWatchdog/3, func(t testing.TB, try int) {
				n := tryName(base, try)
				first := lockMutex(t, c.Mutex(n), fairrw.WithLease(furtherLong))
				releaseEach(t, first, fairrw.Write, fairrw.Write, order,
					func(bool) { refusedMutex(t, c.Mutex(n)) },
					func() *fairrw.Lease { return grantedMutex(t, c.Mutex(n)) })
				EventuallyNoKeys(t, env, n)
			}, func(try int) { forgetMutex(t, env, c, tryName(base, try)) })
		})
	}
}

// forgetMutex is forgetRW for a Mutex.
func forgetMutex(t testing.TB, env Env, c *fairrw.Client, n string) {
	forget(t, env, n, func() error {
		if err := c.Mutex(n).ForceUnlock(ctx(t)); err != nil && !errors.Is(err, fairrw.ErrNotHeld) {
			return err
		}
		return nil
	})
}
