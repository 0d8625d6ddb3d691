package lease

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

const finding1 = "finding 1 (a hold is not a thing in Redis, its owner's count is)"

// TestRedissonReentrantWriteKeepsOuterLease: an owner's outer write
// (2s) and a reentrant write (200ms) of the same owner; the Client's lease
// is 600ms. Unlocking the reentrant hold must not cut the outer one to the
// Client's lease: another owner is refused until the outer Lease's
// Deadline, and gets the lock at once after the outer Unlock.
func TestRedissonReentrantWriteKeepsOuterLease(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	for _, tg := range itest.FAllTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(600*time.Millisecond))
			name := "f1:reentrant-write:" + tg.String()
			o, outer := itest.FFirst(t, tg, c, name, fairrw.Write, fairrw.WithLease(2*time.Second))
			inner := itest.FFurther(t, o, outer, fairrw.Write, fairrw.WithLease(200*time.Millisecond))
			itest.FUnlock(t, finding1, inner)
			itest.FExcludedWhileLive(t, finding1+": the unlock of a reentrant write re-armed the lock with the Client's lease", tg, c, raw, outer, tg.Modes()...)
			itest.FUnlock(t, finding1, outer)
			itest.FFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestRedissonDowngradeReadUnlockKeepsWrite: an owner holds the
// write (2s) and two downgrade reads (400ms each). Unlocking one read must
// not set the lock's lifetime from the reads alone: after the other read's
// lease ends, the write still excludes every other owner until its
// Deadline.
func TestRedissonDowngradeReadUnlockKeepsWrite(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	for _, tg := range itest.FRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(600*time.Millisecond))
			name := "f1:downgrade:" + tg.String()
			o, w := itest.FFirst(t, tg, c, name, fairrw.Write, fairrw.WithLease(2*time.Second))
			r1 := itest.FFurther(t, o, w, fairrw.Read, fairrw.WithLease(400*time.Millisecond))
			r2 := itest.FFurther(t, o, w, fairrw.Read, fairrw.WithLease(400*time.Millisecond))
			itest.FUnlock(t, finding1, r2)
			itest.FExcludedWhileLive(t, finding1+": the unlock of a downgrade read set the lock's TTL from the read leases alone, ignoring the write", tg, c, raw, w, fairrw.Write, fairrw.Read)
			select {
			case <-r1.Done():
			default:
				t.Fatalf("harness: the 400ms read is still alive")
			}
			itest.FUnlock(t, finding1, w)
			itest.FFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestRedissonOlderReadUnlockKeepsNewer: an owner's read (700ms)
// and, 350ms later, a reentrant read (1s). Unlocking the older one must not
// end the newer: the write stays refused to others until the newer read's
// Deadline.
func TestRedissonOlderReadUnlockKeepsNewer(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	for _, tg := range itest.FRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(600*time.Millisecond))
			name := "f1:older-read:" + tg.String()
			o, older := itest.FFirst(t, tg, c, name, fairrw.Read, fairrw.WithLease(700*time.Millisecond))
			time.Sleep(350 * time.Millisecond)
			newer := itest.FFurther(t, o, older, fairrw.Read, fairrw.WithLease(time.Second))
			itest.FUnlock(t, finding1, older)
			itest.FExcludedWhileLive(t, finding1+": the unlock of the older read deleted the newer read's lease key", tg, c, raw, newer, fairrw.Write)
			itest.FUnlock(t, finding1, newer)
			itest.FFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestRedissonRenewalKeepsLongerHold: an owner's explicit hold (2s)
// and a watchdog hold of the same owner (Client lease 600ms, renewed every
// 200ms). The watchdog's renewals must not cut the explicit hold to the
// Client's lease: after the watchdog hold is unlocked, the explicit one
// still excludes others until its Deadline. Under the Redisson policy the
// write's hash PTTL is also checked, while both are held: Java reads it.
func TestRedissonRenewalKeepsLongerHold(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	const clientLease = 600 * time.Millisecond
	for _, tg := range itest.FAllTargets() {
		for _, mode := range tg.Modes() {
			t.Run(tg.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(clientLease))
				name := "f1:renewal:" + tg.String() + ":" + mode.String()
				o, long := itest.FFirst(t, tg, c, name, mode, fairrw.WithLease(2*time.Second))
				wd := itest.FFurther(t, o, long, mode)
				time.Sleep(clientLease + clientLease/6) // at least two renewals
				if mode == fairrw.Write && (tg.Mutex || tg.Policy.String() == fairrw.Redisson().String()) {
					// The hash is the whole lock for Java: it must cover the live explicit hold.
					want := time.Until(long.Deadline())
					if got := time.Duration(itest.FPTTL(t, raw, name)) * time.Millisecond; got < want-100*time.Millisecond {
						t.Fatalf("%s: the watchdog's renewal cut the lock hash's PTTL to %v while a live explicit write of the same owner holds %v more", finding1, got, want.Round(time.Millisecond))
					}
				}
				itest.FUnlock(t, finding1, wd)
				excluded := []fairrw.Mode{fairrw.Write}
				if mode == fairrw.Write && !tg.Mutex {
					excluded = append(excluded, fairrw.Read)
				}
				itest.FExcludedWhileLive(t, finding1+": the watchdog's renewal cut a longer explicit hold of the same owner to the Client's lease", tg, c, raw, long, excluded...)
				itest.FUnlock(t, finding1, long)
				itest.FFreeNow(t, finding1, tg, c, raw, name)
			})
		}
	}
}

// TestRedissonRenewalKeepsWatchdogRead: an owner's watchdog read
// (Client lease 1.5s, renewed every 500ms) and a short explicit read (150ms) of
// the same owner, taken right after, so that it runs out before the first
// renewal. The watchdog read must stay held and renewed (not reported lost
// while Redis still holds it), exclude writers, and unlock cleanly.
func TestRedissonRenewalKeepsWatchdogRead(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	const clientLease = 1500 * time.Millisecond
	for _, tg := range itest.FRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(clientLease))
			name := "f1:renewal-read:" + tg.String()
			o, wd := itest.FFirst(t, tg, c, name, fairrw.Read)
			short := itest.FFurther(t, o, wd, fairrw.Read, fairrw.WithLease(500*time.Millisecond)) // not 150 ms: granted late under load, it was born lost
			itest.FAwaitDone(t, short, 5*time.Second)
			time.Sleep(clientLease * 5 / 6) // two renewals after the short read ended
			select {
			case <-wd.Done():
				t.Fatalf("%s: the owner's watchdog read was reported lost after a short explicit read of the same owner ran out: %v; keys: %s",
					finding1, wd.Err(), itest.FDescribe(t, raw, name))
			default:
			}
			if l, err := tg.Owner(c, name).Acquire(itest.TestCtx(t), fairrw.Write, false); err == nil {
				_ = l.Unlock(itest.TestCtx(t))
				t.Fatalf("%s: another owner got the write while the owner's watchdog read is alive", finding1)
			}
			itest.FUnlock(t, finding1, wd)
			itest.FFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestExpiredReentrantHoldStopsCounting: an owner's watchdog hold
// and a reentrant hold with a short lease (300ms) of the same owner, in
// every mode, under every policy and as the Mutex. Once the short one ran
// out, it no longer counts: after the owner unlocks its last live Lease
// (nil error), another owner's TryLock succeeds at once.
func TestExpiredReentrantHoldStopsCounting(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	for _, tg := range itest.FAllTargets() {
		for _, mode := range tg.Modes() {
			t.Run(tg.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(time.Second))
				name := "f1:expired-reentrant:" + tg.String() + ":" + mode.String()
				o, live := itest.FFirst(t, tg, c, name, mode)
				short := itest.FFurther(t, o, live, mode, fairrw.WithLease(300*time.Millisecond))
				itest.FAwaitDone(t, short, 5*time.Second)
				itest.FUnlock(t, finding1+": the owner's last live Lease (a reentrant hold of it ran out before)", live)
				itest.FFreeNow(t, finding1+": a reentrant hold whose own lease ran out still counts", tg, c, raw, name)
			})
		}
	}
}
