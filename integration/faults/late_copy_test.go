package faults

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestLateAcquireCopyTakesNothing: a Lock whose first copy was delayed is
// granted by its retry and unlocked; the delayed copy then reaches Redis.
// It must take nothing: the owner's last release marked it, since one of its
// attempts had an outcome it never learned.
func TestLateAcquireCopyTakesNothing(t *testing.T) {
	for _, lc := range itest.LateCases() {
		t.Run(lc.Name, func(t *testing.T) {
			p, c, other := lc.Setup(t)
			ctx := itest.TestCtx(t)
			const name = "late-acquire"
			p.Arm(func(b []byte) bool { return itest.ContainsAll(b, lc.Acquire, name) })
			l, err := lc.Lock(ctx, c, name, false, fairrw.WithLease(8*time.Second))
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			p.WaitHeld(t, time.Second)
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			p.Deliver(t)
			o, err := lc.Lock(ctx, other, name, true)
			if err != nil {
				t.Fatalf("every Lease was unlocked with nil, yet a late copy of the acquire took the lock again: TryLock: %v", err)
			}
			itest.MustUnlock(t, o)
		})
	}
}

// TestLateAcquireCopyAfterLeaseRanOut: a Lock whose first copy was delayed
// is granted by its retry WithLease(300ms), and its holder never unlocks:
// the lease runs out. The delayed copy then reaches Redis, within its
// accept window. It must take nothing: once its last Lease ran out, the
// owner, one of whose attempts had an outcome it never learned, was given
// up (its marker set), as its release would have. Without that, the copy
// took the lock again for an owner no Lease stands for, for its lease (the
// conformance test's inspect/token finding: a write with a token 0.9 s
// newer than its owner's Lease's).
func TestLateAcquireCopyAfterLeaseRanOut(t *testing.T) {
	for _, lc := range itest.LateCases() {
		t.Run(lc.Name, func(t *testing.T) {
			p, c, other := lc.Setup(t)
			ctx := itest.TestCtx(t)
			const name = "late-acquire-ran-out"
			p.Arm(func(b []byte) bool { return itest.ContainsAll(b, lc.Acquire, name) })
			l, err := lc.Lock(ctx, c, name, false, fairrw.WithLease(300*time.Millisecond))
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			p.WaitHeld(t, time.Second)
			select {
			case <-l.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the 300 ms lease did not run out in 10 s")
			}
			if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("Err after the lease ran out: %v, want ErrLeaseLost", l.Err())
			}
			raw := rawClient(t, p.Target())
			marker := fwire.OwnerMarker(name, l.Owner())
			for deadline := time.Now().Add(10 * time.Second); ; {
				n, err := raw.Do(ctx, raw.B().Exists().Key(marker).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the owner of a Lease that ran out, with an attempt whose outcome it never learned, was not given up in 10 s (no %s)", marker)
				}
				time.Sleep(5 * time.Millisecond)
			}
			p.Deliver(t)
			o, err := lc.Lock(ctx, other, name, true)
			if err != nil {
				t.Fatalf("the only Lease ran out and its owner was given up, yet a late copy of its acquire took the lock again: TryLock: %v", err)
			}
			itest.MustUnlock(t, o)
		})
	}
}

// rawClient is a plain client on the Redis at addr, closed at cleanup.
func rawClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestLateReleaseCopyChangesNothing: an owner holds A and a further write
// B; B's unlock is delayed, its retry answered; the owner takes a further
// write C with a long lease; the delayed copy of B's unlock then reaches
// Redis. It must not write the owner's state of B's time (covering only A):
// the unlock latch, kept for the accept window since a try failed, answers
// it. Once A has ended, C still keeps every other owner out.
func TestLateReleaseCopyChangesNothing(t *testing.T) {
	for _, lc := range itest.LateCases() {
		t.Run(lc.Name, func(t *testing.T) {
			p, c, other := lc.Setup(t)
			ctx := itest.TestCtx(t)
			const name = "late-release"
			a, err := lc.Lock(ctx, c, name, false, fairrw.WithLease(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			b, err := a.Lock(ctx, fairrw.WithLease(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			p.Arm(func(buf []byte) bool { return itest.ContainsAll(buf, lc.Unlck, name) })
			if err := b.Unlock(ctx); err != nil {
				t.Fatalf("Unlock B: %v", err)
			}
			p.WaitHeld(t, time.Second)
			time.Sleep(100 * time.Millisecond) // what the janitor would have deleted is gone by now
			cl, err := a.Lock(ctx, fairrw.WithLease(12*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			p.Deliver(t)
			<-a.Done()
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				o, err := lc.Lock(ctx, other, name, true)
				if err == nil {
					live := time.Now().Before(cl.Deadline())
					select {
					case <-cl.Done():
						live = false
					default:
					}
					itest.MustUnlock(t, o)
					if live {
						t.Fatalf("another owner got the write while the further hold C is live (%v before its deadline)", time.Until(cl.Deadline()))
					}
					break
				}
			}
			itest.MustUnlock(t, cl)
		})
	}
}
