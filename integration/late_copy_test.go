package integration

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/redistest"
)

// Copies of a command delayed in the network (found by an adversarial pass
// of the review): the first copy is held back on a connection that the client
// sees break, the client's retry on a new connection is answered, and the
// held copy reaches Redis later, within the accept window.

// lateCase is a policy (or the Mutex) and the digests of its acquire and
// unlock scripts, to recognize their commands on the wire.
type lateCase struct {
	name           string
	policy         fairrw.Policy
	mutex          bool
	acquire, unlck string
}

func scriptSHA(parts ...string) string {
	s := sha1.Sum([]byte(lua.Compose(parts...)))
	return hex.EncodeToString(s[:])
}

func lateCases() []lateCase {
	fairAcq, fairUnl := scriptSHA("fair_acquire_fast", "common", "fair_lib", "fair_acquire"), scriptSHA("common", "fair_lib", "fair_unlock")
	return []lateCase{
		{"redisson", fairrw.Redisson(), false, scriptSHA("common", "redisson_lib", "redisson_write_acquire"), scriptSHA("common", "redisson_lib", "redisson_unlock")},
		{"writer-preferring", fairrw.WriterPreferring(), false, fairAcq, fairUnl},
		{"phase-fair", fairrw.PhaseFair(), false, fairAcq, fairUnl},
		{"mutex", fairrw.Redisson(), true, scriptSHA("common", "redisson_lib", "redisson_lock_acquire"), scriptSHA("common", "redisson_lib", "redisson_lock_unlock")},
	}
}

func (lc lateCase) client(t *testing.T, addr string) *fairrw.Client {
	t.Helper()
	c, err := fairrw.New(fairrw.WithPolicy(lc.policy), fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lock takes the write (or the mutex) for a new owner.
func (lc lateCase) lock(ctx context.Context, c *fairrw.Client, name string, try bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case lc.mutex && try:
		return c.Mutex(name).TryLock(ctx, opts...)
	case lc.mutex:
		return c.Mutex(name).Lock(ctx, opts...)
	case try:
		return c.RWMutex(name).TryLock(ctx, opts...)
	default:
		return c.RWMutex(name).Lock(ctx, opts...)
	}
}

// setup starts a redis-server, a hold proxy before it, a Client through the
// proxy (scripts loaded, so the next command is one EVALSHA) and one
// direct.
func (lc lateCase) setup(t *testing.T) (*holdProxy, *fairrw.Client, *fairrw.Client) {
	r := redistest.StartProcess(t)
	p := startHoldProxy(t, r.Addr)
	c, other := lc.client(t, p.Addr()), lc.client(t, r.Addr)
	w, err := lc.lock(testCtx(t), c, "warm", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return p, c, other
}

// TestLateAcquireCopyTakesNothing: a Lock whose first copy was delayed is
// granted by its retry and unlocked; the delayed copy then reaches Redis.
// It must take nothing: the owner's last release marked it, since one of its
// attempts had an outcome it never learned.
func TestLateAcquireCopyTakesNothing(t *testing.T) {
	for _, lc := range lateCases() {
		t.Run(lc.name, func(t *testing.T) {
			p, c, other := lc.setup(t)
			ctx := testCtx(t)
			const name = "late-acquire"
			p.arm(func(b []byte) bool { return containsAll(b, lc.acquire, name) })
			l, err := lc.lock(ctx, c, name, false, fairrw.WithLease(8*time.Second))
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			p.waitHeld(t, time.Second)
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			p.deliver(t)
			o, err := lc.lock(ctx, other, name, true)
			if err != nil {
				t.Fatalf("every Lease was unlocked with nil, yet a late copy of the acquire took the lock again: TryLock: %v", err)
			}
			mustUnlock(t, o)
		})
	}
}

// TestLateReleaseCopyChangesNothing: an owner holds A and a further write
// B; B's unlock is delayed, its retry answered; the owner takes a further
// write C with a long lease; the delayed copy of B's unlock then reaches
// Redis. It must not write the owner's state of B's time (covering only A):
// the unlock latch, kept for the accept window since a try failed, answers
// it. Once A has ended, C still keeps every other owner out.
func TestLateReleaseCopyChangesNothing(t *testing.T) {
	for _, lc := range lateCases() {
		t.Run(lc.name, func(t *testing.T) {
			p, c, other := lc.setup(t)
			ctx := testCtx(t)
			const name = "late-release"
			a, err := lc.lock(ctx, c, name, false, fairrw.WithLease(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			b, err := a.Lock(ctx, fairrw.WithLease(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			p.arm(func(buf []byte) bool { return containsAll(buf, lc.unlck, name) })
			if err := b.Unlock(ctx); err != nil {
				t.Fatalf("Unlock B: %v", err)
			}
			p.waitHeld(t, time.Second)
			time.Sleep(100 * time.Millisecond) // what the janitor would have deleted is gone by now
			cl, err := a.Lock(ctx, fairrw.WithLease(12*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			p.deliver(t)
			<-a.Done()
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				o, err := lc.lock(ctx, other, name, true)
				if err == nil {
					live := time.Now().Before(cl.Deadline())
					select {
					case <-cl.Done():
						live = false
					default:
					}
					mustUnlock(t, o)
					if live {
						t.Fatalf("another owner got the write while the further hold C is live (%v before its deadline)", time.Until(cl.Deadline()))
					}
					break
				}
			}
			mustUnlock(t, cl)
		})
	}
}
