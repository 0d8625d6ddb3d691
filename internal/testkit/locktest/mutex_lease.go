package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/wire"
)

// MutexExplicitLeaseExpires: a Mutex taken WithLease has exactly that PTTL
// and is not renewed: its hash (and every other key of the name) is gone
// after it, Done closes with
// ErrLeaseLost, and a waiter gets the mutex without any message from the
// holder.
func MutexExplicitLeaseExpires(t *testing.T, env Env) {
	const lease = 300 * time.Millisecond
	c := env.client(t)
	n := name(t)
	l := lockMutex(t, c.Mutex(n), fairrw.WithLease(lease))
	if pttl := rawPTTL(t, env, n); pttl <= 0 || pttl > lease+hidden.LeaseMargin {
		t.Fatalf("PTTL %v, want within (0, %v] (the lease and LeaseMargin)", pttl, lease+hidden.LeaseMargin)
	}
	if err := waitDone(t, l, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
		t.Fatalf("expired lease: Err = %v, want ErrLeaseLost", err)
	}
	eventuallyGone(t, env, n)
	// Its last token goes with it: nothing of the name is left.
	EventuallyNothing(t, env, n, 5*time.Second)

	l = lockMutex(t, c.Mutex(n), fairrw.WithLease(lease))
	waiting := mutexAsync(ctx(t), c.Mutex(n))
	if err := waitDone(t, l, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
		t.Fatalf("expired lease: Err = %v, want ErrLeaseLost", err)
	}
	next := receive(t, waiting)
	if err := l.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock after expiry: %v, want ErrNotHeld", err)
	}
	mutexHash(t, env, n, map[string]string{next.Owner(): "1"})
	unlock(t, next)
	EventuallyNoKeys(t, env, n)
}

// MutexWatchdogKeepsAlive: without WithLease, the Client's watchdog keeps a
// mutex (and a further hold taken from its Lease) past several lease times, and the
// hash's PTTL stays within the lease. A read-write lock of the same Client
// on another name is renewed in the same rounds (by its policy's script).
func MutexWatchdogKeepsAlive(t *testing.T, env Env) {
	// Two seconds, not a tiny lease: a loaded machine running a renewal late
	// must not lose the holds this scenario needs alive; and a try that
	// failed while the machine or Redis stalled for a renew interval runs
	// again (see retried).
	const lease = 2 * time.Second // as FurtherHoldsEach's: 1 s leases were lost under two suites side by side
	w, watched := watchStalls(t, env.Raw)
	c := env.client(t, fairrw.WithLeaseTime(lease), watched)
	w.retried(t, lease/3, func(t testing.TB, try int) {
		n := tryName(name(t), try)
		m := c.Mutex(n)
		first := lockMutex(t, m)
		second := hold(t, first, fairrw.Write)
		rw := lock(t, c.RWMutex(n+":rw"), fairrw.Write)
		time.Sleep(4 * lease)
		alive(t, first)
		alive(t, second)
		alive(t, rw)
		unlock(t, rw)
		mutexHash(t, env, n, map[string]string{first.Owner(): "2"})
		if pttl := rawPTTL(t, env, n); pttl <= 0 || pttl > lease+hidden.LeaseMargin {
			t.Fatalf("PTTL %v after %v, want within (0, %v] (the lease and LeaseMargin)", pttl, 4*lease, lease+hidden.LeaseMargin)
		}
		refusedMutex(t, env.client(t).Mutex(n))
		unlock(t, second)
		unlock(t, first)
		EventuallyNoKeys(t, env, n)
	}, func(try int) {
		n := tryName(name(t), try)
		forgetMutex(t, env, c, n)
		forgetRW(t, env, c, n+":rw")
	})
}

// MutexDeadClientFrees: a client that goes away without unlocking leaves
// its hold in Redis, which frees it within the lease; a waiter in another
// client then gets the mutex.
func MutexDeadClientFrees(t *testing.T, env Env) {
	const lease = 1500 * time.Millisecond // kept until the Close and the check after it on a loaded machine, as DeadClientFreesLock's
	dead, live := env.client(t, fairrw.WithLeaseTime(lease)), env.client(t)
	n := name(t)
	l := lockMutex(t, dead.Mutex(n))
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); !errors.Is(err, fairrw.ErrLeaseLost) || !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("lease after Close: %v, want ErrLeaseLost and ErrClosed", err)
	}
	mutexHash(t, env, n, map[string]string{l.Owner(): "1"})
	c, cancel := context.WithTimeout(ctx(t), 10*time.Second)
	defer cancel()
	next, err := live.Mutex(n).Lock(c)
	if err != nil {
		t.Fatalf("Lock after the holder's client died: %v", err)
	}
	mutexHash(t, env, n, map[string]string{next.Owner(): "1"})
	unlock(t, next)
	EventuallyNoKeys(t, env, n)
}

// MutexUnlockByOtherOwnerFails: a lease whose field Redis no longer has
// (removed behind its back, another owner holding the mutex since) fails to
// unlock with ErrNotHeld and leaves the other owner's hold intact.
func MutexUnlockByOtherOwnerFails(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	n := name(t)
	stale := lockMutex(t, c1.Mutex(n))
	if err := env.Raw.Do(ctx(t), env.Raw.B().Hdel().Key(n).Field(compat.MutexField(stale.Owner())).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	next := lockMutex(t, c2.Mutex(n))
	if err := stale.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock of a hold Redis no longer has: %v, want ErrNotHeld", err)
	}
	alive(t, next)
	mutexHash(t, env, n, map[string]string{next.Owner(): "1"})
	refusedMutex(t, c1.Mutex(n))
	unlock(t, next)
	EventuallyNoKeys(t, env, n)
}

// MutexForceUnlock: ForceUnlock of a free mutex is ErrNotHeld; of a held
// one it frees it, a Lock waiting in another client is granted, and the old
// holder learns at its next renewal that its lease is lost.
func MutexForceUnlock(t *testing.T, env Env) {
	const lease = 900 * time.Millisecond
	holder, other := env.client(t, fairrw.WithLeaseTime(lease)), env.client(t)
	n := name(t)
	if err := other.Mutex(n).ForceUnlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("ForceUnlock of a free mutex: %v, want ErrNotHeld", err)
	}
	held := lockMutex(t, holder.Mutex(n))
	waiting := mutexAsync(ctx(t), other.Mutex(n))
	blocked(t, waiting)
	if err := other.Mutex(n).ForceUnlock(ctx(t)); err != nil {
		t.Fatalf("ForceUnlock of a held mutex: %v", err)
	}
	next := receive(t, waiting)
	if err := waitDone(t, held, 5*lease); !errors.Is(err, fairrw.ErrLeaseLost) {
		t.Fatalf("force-unlocked holder: Err = %v, want ErrLeaseLost", err)
	}
	if err := held.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock by the force-unlocked holder: %v, want ErrNotHeld", err)
	}
	alive(t, next)
	mutexHash(t, env, n, map[string]string{next.Owner(): "1"})
	unlock(t, next)
	EventuallyNoKeys(t, env, n)
}

// MutexFencingTokens: every new holder, in either client, gets a token
// above all before it, stored as the name's last token with a TTL (no key
// outlives the lock); a further Lock keeps its holder's token.
func MutexFencingTokens(t *testing.T, env Env) {
	clients := []*fairrw.Client{env.client(t), env.client(t)}
	n := name(t)
	var last uint64
	for i := range 4 {
		m := clients[i%2].Mutex(n)
		l := lockMutex(t, m)
		if l.Token() <= last {
			t.Fatalf("grant %d: token %d, not above %d", i, l.Token(), last)
		}
		last = l.Token()
		if stored := rawGet(t, env, wire.Fence(n)); stored != itoa(int64(last)) {
			t.Fatalf("%s = %q after grant %d, want %d", wire.Fence(n), stored, i, last)
		}
		if pttl := rawPTTL(t, env, wire.Fence(n)); pttl <= 0 || pttl > hidden.LeaseTime {
			t.Fatalf("%s has PTTL %v, want within (0, %v]", wire.Fence(n), pttl, hidden.LeaseTime)
		}
		again := hold(t, l, fairrw.Write)
		if again.Token() != last {
			t.Fatalf("further Lock: token %d, want the holder's %d", again.Token(), last)
		}
		unlock(t, again)
		unlock(t, l)
	}
	EventuallyNoKeys(t, env, n)
}

// MutexShorterHoldNeverShortens: no hold cuts a longer hold of the same
// owner short (Java's RLock sets the lease again in each of these places,
// and could let another owner in early). The second hold is taken with a
// short WithLease (a further Lock from the Lease), or with the Client's short watchdog
// lease and renewed a few times (renewals); either way it is unlocked while
// the first, taken WithLease(long), must still keep the mutex.
func MutexShorterHoldNeverShortens(t *testing.T, env Env) {
	const short, long = furtherShort, furtherLong
	for _, renewed := range []bool{false, true} {
		// The two cases mostly wait for leases: side by side.
		t.Run("renewed="+map[bool]string{false: "no", true: "yes"}[renewed], func(t *testing.T) {
			t.Parallel()
			mutexShorterHoldCase(t, env, renewed, short, long)
		})
	}
}

// mutexShorterHoldCase is a case of MutexShorterHoldNeverShortens.
func mutexShorterHoldCase(t *testing.T, env Env, renewed bool, short, long time.Duration) {
	c := env.client(t, fairrw.WithLeaseTime(furtherWatchdog))
	n := name(t) + ":renewed=" + map[bool]string{false: "no", true: "yes"}[renewed]
	m := c.Mutex(n)
	first := lockMutex(t, m, fairrw.WithLease(long))
	var second *fairrw.Lease
	if renewed {
		second = hold(t, first, fairrw.Write)
		time.Sleep(3 * furtherWatchdog) // renewal rounds ran
	} else {
		second = hold(t, first, fairrw.Write, fairrw.WithLease(short))
	}
	if pttl := rawPTTL(t, env, n); pttl < long/2 {
		t.Fatalf("renewed=%v: the second hold cut the PTTL to %v, under the first hold's %v", renewed, pttl, long)
	}
	unlock(t, second) // the Client's lease is short: it must not become the PTTL
	time.Sleep(furtherCut)
	refusedMutex(t, c.Mutex(n))
	alive(t, first)
	unlock(t, first)
	EventuallyNoKeys(t, env, n)
}
