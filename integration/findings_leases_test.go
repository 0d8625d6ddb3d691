package integration

// Finding 1 of the review: a hold is not a thing in Redis, its owner's count
// is. The rule every test here checks: no operation on one hold ever
// shortens another live hold (another owner is refused while a live Lease
// of the first has not passed its Deadline), and a hold whose lease ended
// stops counting (once every live Lease of the owner is unlocked, with nil
// errors, another owner's TryLock succeeds at once).
//
// The cases the review found under the Redisson policy run over every
// policy (and the Mutex, where it has the modes): the rule holds for all,
// and the redesign rewrites every script.

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/redistest"
)

const finding1 = "finding 1 (a hold is not a thing in Redis, its owner's count is)"

// TestFinding1RedissonReentrantWriteKeepsOuterLease: an owner's outer write
// (2s) and a reentrant write (200ms) of the same owner; the Client's lease
// is 600ms. Unlocking the reentrant hold must not cut the outer one to the
// Client's lease: another owner is refused until the outer Lease's
// Deadline, and gets the lock at once after the outer Unlock.
func TestFinding1RedissonReentrantWriteKeepsOuterLease(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	for _, tg := range fAllTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := fClient(t, r, tg, fairrw.WithLeaseTime(600*time.Millisecond))
			name := "f1:reentrant-write:" + tg.String()
			o, outer := fFirst(t, tg, c, name, fairrw.Write, fairrw.WithLease(2*time.Second))
			inner := fFurther(t, o, outer, fairrw.Write, fairrw.WithLease(200*time.Millisecond))
			fUnlock(t, finding1, inner)
			fExcludedWhileLive(t, finding1+": the unlock of a reentrant write re-armed the lock with the Client's lease", tg, c, raw, outer, tg.modes()...)
			fUnlock(t, finding1, outer)
			fFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestFinding1RedissonDowngradeReadUnlockKeepsWrite: an owner holds the
// write (2s) and two downgrade reads (400ms each). Unlocking one read must
// not set the lock's lifetime from the reads alone: after the other read's
// lease ends, the write still excludes every other owner until its
// Deadline.
func TestFinding1RedissonDowngradeReadUnlockKeepsWrite(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	for _, tg := range fRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := fClient(t, r, tg, fairrw.WithLeaseTime(600*time.Millisecond))
			name := "f1:downgrade:" + tg.String()
			o, w := fFirst(t, tg, c, name, fairrw.Write, fairrw.WithLease(2*time.Second))
			r1 := fFurther(t, o, w, fairrw.Read, fairrw.WithLease(400*time.Millisecond))
			r2 := fFurther(t, o, w, fairrw.Read, fairrw.WithLease(400*time.Millisecond))
			fUnlock(t, finding1, r2)
			fExcludedWhileLive(t, finding1+": the unlock of a downgrade read set the lock's TTL from the read leases alone, ignoring the write", tg, c, raw, w, fairrw.Write, fairrw.Read)
			select {
			case <-r1.Done():
			default:
				t.Fatalf("harness: the 400ms read is still alive")
			}
			fUnlock(t, finding1, w)
			fFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestFinding1RedissonOlderReadUnlockKeepsNewer: an owner's read (700ms)
// and, 350ms later, a reentrant read (1s). Unlocking the older one must not
// end the newer: the write stays refused to others until the newer read's
// Deadline.
func TestFinding1RedissonOlderReadUnlockKeepsNewer(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	for _, tg := range fRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := fClient(t, r, tg, fairrw.WithLeaseTime(600*time.Millisecond))
			name := "f1:older-read:" + tg.String()
			o, older := fFirst(t, tg, c, name, fairrw.Read, fairrw.WithLease(700*time.Millisecond))
			time.Sleep(350 * time.Millisecond)
			newer := fFurther(t, o, older, fairrw.Read, fairrw.WithLease(time.Second))
			fUnlock(t, finding1, older)
			fExcludedWhileLive(t, finding1+": the unlock of the older read deleted the newer read's lease key", tg, c, raw, newer, fairrw.Write)
			fUnlock(t, finding1, newer)
			fFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestFinding1RedissonRenewalKeepsLongerHold: an owner's explicit hold (2s)
// and a watchdog hold of the same owner (Client lease 600ms, renewed every
// 200ms). The watchdog's renewals must not cut the explicit hold to the
// Client's lease: after the watchdog hold is unlocked, the explicit one
// still excludes others until its Deadline. Under the Redisson policy the
// write's hash PTTL is also checked, while both are held: Java reads it.
func TestFinding1RedissonRenewalKeepsLongerHold(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	const clientLease = 600 * time.Millisecond
	for _, tg := range fAllTargets() {
		for _, mode := range tg.modes() {
			t.Run(tg.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				c := fClient(t, r, tg, fairrw.WithLeaseTime(clientLease))
				name := "f1:renewal:" + tg.String() + ":" + mode.String()
				o, long := fFirst(t, tg, c, name, mode, fairrw.WithLease(2*time.Second))
				wd := fFurther(t, o, long, mode)
				time.Sleep(clientLease + clientLease/6) // at least two renewals
				if mode == fairrw.Write && (tg.mutex || tg.policy.String() == fairrw.Redisson().String()) {
					// The hash is the whole lock for Java: it must cover the live explicit hold.
					want := time.Until(long.Deadline())
					if got := time.Duration(fPTTL(t, raw, name)) * time.Millisecond; got < want-100*time.Millisecond {
						t.Fatalf("%s: the watchdog's renewal cut the lock hash's PTTL to %v while a live explicit write of the same owner holds %v more", finding1, got, want.Round(time.Millisecond))
					}
				}
				fUnlock(t, finding1, wd)
				excluded := []fairrw.Mode{fairrw.Write}
				if mode == fairrw.Write && !tg.mutex {
					excluded = append(excluded, fairrw.Read)
				}
				fExcludedWhileLive(t, finding1+": the watchdog's renewal cut a longer explicit hold of the same owner to the Client's lease", tg, c, raw, long, excluded...)
				fUnlock(t, finding1, long)
				fFreeNow(t, finding1, tg, c, raw, name)
			})
		}
	}
}

// TestFinding1RedissonRenewalKeepsWatchdogRead: an owner's watchdog read
// (Client lease 1.5s, renewed every 500ms) and a short explicit read (150ms) of
// the same owner, taken right after, so that it runs out before the first
// renewal. The watchdog read must stay held and renewed (not reported lost
// while Redis still holds it), exclude writers, and unlock cleanly.
func TestFinding1RedissonRenewalKeepsWatchdogRead(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	const clientLease = 1500 * time.Millisecond
	for _, tg := range fRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			t.Parallel()
			c := fClient(t, r, tg, fairrw.WithLeaseTime(clientLease))
			name := "f1:renewal-read:" + tg.String()
			o, wd := fFirst(t, tg, c, name, fairrw.Read)
			short := fFurther(t, o, wd, fairrw.Read, fairrw.WithLease(500*time.Millisecond)) // not 150 ms: granted late under load, it was born lost
			fAwaitDone(t, short, 5*time.Second)
			time.Sleep(clientLease * 5 / 6) // two renewals after the short read ended
			select {
			case <-wd.Done():
				t.Fatalf("%s: the owner's watchdog read was reported lost after a short explicit read of the same owner ran out: %v; keys: %s",
					finding1, wd.Err(), fDescribe(t, raw, name))
			default:
			}
			if l, err := tg.owner(c, name).acquire(testCtx(t), fairrw.Write, false); err == nil {
				_ = l.Unlock(testCtx(t))
				t.Fatalf("%s: another owner got the write while the owner's watchdog read is alive", finding1)
			}
			fUnlock(t, finding1, wd)
			fFreeNow(t, finding1, tg, c, raw, name)
		})
	}
}

// TestFinding1ExpiredReentrantHoldStopsCounting: an owner's watchdog hold
// and a reentrant hold with a short lease (300ms) of the same owner, in
// every mode, under every policy and as the Mutex. Once the short one ran
// out, it no longer counts: after the owner unlocks its last live Lease
// (nil error), another owner's TryLock succeeds at once.
func TestFinding1ExpiredReentrantHoldStopsCounting(t *testing.T) {
	t.Parallel() // sleep-bound, with its own redis-server
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	for _, tg := range fAllTargets() {
		for _, mode := range tg.modes() {
			t.Run(tg.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				c := fClient(t, r, tg, fairrw.WithLeaseTime(time.Second))
				name := "f1:expired-reentrant:" + tg.String() + ":" + mode.String()
				o, live := fFirst(t, tg, c, name, mode)
				short := fFurther(t, o, live, mode, fairrw.WithLease(300*time.Millisecond))
				fAwaitDone(t, short, 5*time.Second)
				fUnlock(t, finding1+": the owner's last live Lease (a reentrant hold of it ran out before)", live)
				fFreeNow(t, finding1+": a reentrant hold whose own lease ran out still counts", tg, c, raw, name)
			})
		}
	}
}
