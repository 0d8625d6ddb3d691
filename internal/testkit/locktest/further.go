package locktest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// The rule every hold keeps: no operation on one hold of an owner (its
// release, its expiry, its renewal) ever shortens another live hold of the
// same owner, and a hold whose lease ended stops counting.

const (
	// furtherShort is the short explicit lease (WithLease) of these
	// scenarios: it runs out while the test looks. Half a second, so that
	// a further hold granted late on a loaded machine is not answered after
	// its lease ran out.
	furtherShort = 500 * time.Millisecond
	// furtherWatchdog is the Client's lease time, that the watchdog renews
	// with (and that a release must not set again). It is two seconds
	// rather than a tiny lease so that a loaded machine (two CPU burners
	// beside six test packages), running a renewal late, cannot lose a hold
	// the scenario needs alive.
	furtherWatchdog = 2 * time.Second
	// furtherCut is how long a scenario waits before it checks that a hold
	// was not cut short: any lease cut to the short one, or set to the
	// Client's, would have run out by then.
	furtherCut = 2 * furtherWatchdog
	// furtherLong is the long explicit lease that must not be cut short.
	furtherLong = 20 * time.Second
)

// ShorterHoldNeverShortens: an owner holds the lock WithLease(long) on a
// Client whose lease time is short, and takes a further hold: a write, a
// downgrade read or a read, with a long lease, a short one, or the
// watchdog's. Whether that further hold is unlocked, runs out or is renewed
// a few times and then unlocked, the lock stays held for the long hold: other
// owners are refused well after a short lease would have run out. With
// "older", the long hold is the one released, and the further hold must
// keep the lock.
func ShorterHoldNeverShortens(t *testing.T, env Env) {
	w, watched := watchStalls(t, env.Raw)
	c := env.client(t, fairrw.WithLeaseTime(furtherWatchdog), watched)
	for _, tc := range []shorterCase{
		{"write/long", fairrw.Write, fairrw.Write, furtherLong, false},
		{"write/short", fairrw.Write, fairrw.Write, furtherShort, false},
		{"write/watchdog", fairrw.Write, fairrw.Write, 0, false},
		{"write/older", fairrw.Write, fairrw.Write, furtherLong, true},
		{"downgrade/short", fairrw.Write, fairrw.Read, furtherShort, false},
		{"downgrade/watchdog", fairrw.Write, fairrw.Read, 0, false},
		{"downgrade/older", fairrw.Write, fairrw.Read, furtherLong, true},
		{"read/long", fairrw.Read, fairrw.Read, furtherLong, false},
		{"read/short", fairrw.Read, fairrw.Read, furtherShort, false},
		{"read/watchdog", fairrw.Read, fairrw.Read, 0, false},
		{"read/older", fairrw.Read, fairrw.Read, furtherLong, true},
	} {
		// The cases mostly wait for leases: side by side, each on its own lock.
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := name(t) + ":" + tc.name
			w.retried(t, furtherWatchdog/3,
				func(tb testing.TB, try int) { tc.run(tb, env, c, tryName(n, try)) },
				func(try int) { forgetRW(t, env, c, tryName(n, try)) })
		})
	}
}

// tryName is the lock name of a case's try: the first try's is the case's.
func tryName(n string, try int) string {
	if try == 1 {
		return n
	}
	return fmt.Sprintf("%s:try%d", n, try)
}

// forgetRW frees n, whose try failed with holds left, and waits until
// Redis keeps nothing of it. It frees n again while anything is left: a
// try's call that Redis answered late (an Unlock left to the background,
// a copy of an attempt) may still change n after the first ForceUnlock (a
// key of a failed try stayed 5 s after it, two CPU burners beside the
// suite). Nothing may outlive the try's longest lease, furtherLong.
func forgetRW(t testing.TB, env Env, c *fairrw.Client, n string) {
	forget(t, env, n, func() error {
		for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			if err := c.RWMutex(n).ForceUnlock(ctx(t), mode); err != nil && !errors.Is(err, fairrw.ErrNotHeld) {
				return err
			}
		}
		return nil
	})
}

// forget runs free, then again every 250 ms until Redis keeps no key of
// n, for furtherLong and a few seconds at most.
func forget(t testing.TB, env Env, n string, free func() error) {
	deadline := time.Now().Add(furtherLong + 5*time.Second)
	logged := false
	for {
		if err := free(); err != nil {
			t.Fatalf("ForceUnlock of %s after a failed try: %v", n, err)
		}
		keys := keysOf(t, env, n)
		if len(keys) == 0 {
			return
		}
		if !logged {
			t.Logf("after a ForceUnlock of %s, a failed try's, Redis still keeps %v: freeing it again", n, keys)
			logged = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left behind for %s, a failed try's, %v after it: %s", n, furtherLong, describeKeys(t, env, keys))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// shorterCase is a case of ShorterHoldNeverShortens.
type shorterCase struct {
	name          string
	first, second fairrw.Mode
	lease         time.Duration // of the further hold; 0 for the watchdog
	releaseFirst  bool
}

func (tc shorterCase) run(t testing.TB, env Env, c *fairrw.Client, n string) {
	first := lock(t, c.RWMutex(n), tc.first, fairrw.WithLease(furtherLong))
	var opts []fairrw.AcquireOption
	if tc.lease > 0 {
		opts = append(opts, fairrw.WithLease(tc.lease))
	}
	second := holdInTime(t, first, tc.second, opts...)
	kept, gone := first, second
	if tc.releaseFirst {
		kept, gone = second, first
	}
	switch {
	case tc.lease == 0:
		time.Sleep(3 * furtherWatchdog) // renewal rounds run
		alive(t, second)
		keptOut(t, c, n, tc.first == fairrw.Write)
		unlock(t, gone)
	case tc.lease == furtherShort:
		if err := waitDone(t, gone, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
			t.Fatalf("%s: the short hold ended with %v, want ErrLeaseLost", tc.name, err)
		}
		if err := gone.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
			t.Fatalf("%s: Unlock of the expired hold: %v, want ErrNotHeld", tc.name, err)
		}
	default:
		unlock(t, gone)
	}
	time.Sleep(furtherCut)
	keptOut(t, c, n, hidden.Mode(kept) == fairrw.Write)
	alive(t, kept)
	unlock(t, kept)
	unlock(t, granted(t, c.RWMutex(n), fairrw.Write))
	EventuallyNoKeys(t, env, n)
}

// keptOut checks that other owners are refused the write, and the read too
// when write is set; without it, another owner's read is granted.
func keptOut(t testing.TB, c *fairrw.Client, n string, write bool) {
	t.Helper()
	refused(t, c.RWMutex(n), fairrw.Write)
	if write {
		refused(t, c.RWMutex(n), fairrw.Read)
	} else {
		unlock(t, granted(t, c.RWMutex(n), fairrw.Read))
	}
}

// orders are the orders in which three holds can be released.
var orders = [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}

// FurtherHoldsEach: an owner holds the lock three times, each hold with its
// own lease: the first WithLease(long), a further one WithLease(short) and
// a further one renewed by the watchdog (on a Client whose lease time is
// short). As writes, as reads, and as a write with two downgrade reads,
// released in every order: while a hold other than the short one is live,
// other owners are kept out (checked after any short lease would have run
// out) and the live holds stay alive; the short hold, once run out, is
// ErrNotHeld and counts no more; and as soon as the last live hold is
// unlocked, another owner's TryLock is granted at once.
func FurtherHoldsEach(t *testing.T, env Env) {
	w, watched := watchStalls(t, env.Raw)
	c := env.client(t, fairrw.WithLeaseTime(furtherWatchdog), watched)
	for _, kind := range []struct {
		name  string
		modes [3]fairrw.Mode
	}{
		{"write", [3]fairrw.Mode{fairrw.Write, fairrw.Write, fairrw.Write}},
		{"read", [3]fairrw.Mode{fairrw.Read, fairrw.Read, fairrw.Read}},
		{"downgrade", [3]fairrw.Mode{fairrw.Write, fairrw.Read, fairrw.Read}},
	} {
		for _, order := range orders {
			// The cases wait on leases: side by side, each on its own lock.
			t.Run(fmt.Sprintf("%s/%d%d%d", kind.name, order[0], order[1], order[2]), func(t *testing.T) {
				t.Parallel()
				base := fmt.Sprintf("%s:%s:%d%d%d", name(t), kind.name, order[0], order[1], order[2])
				w.retried(t, furtherWatchdog/3, func(t testing.TB, try int) {
					n := tryName(base, try)
					first := lock(t, c.RWMutex(n), kind.modes[0], fairrw.WithLease(furtherLong))
					releaseEach(t, first, kind.modes[1], kind.modes[2], order,
						func(write bool) { keptOut(t, c, n, write) },
						func() *fairrw.Lease { return granted(t, c.RWMutex(n), fairrw.Write) })
					EventuallyNoKeys(t, env, n)
				}, func(try int) { forgetRW(t, env, c, tryName(base, try)) })
			})
		}
	}
}

// releaseEach takes two further holds from first (of modes m1 with a short
// lease and m2 with the watchdog's) and releases the three in order (indices
// 0 first, 1 short, 2 watchdog), checking after each release that the holds
// still live keep others out (keepOut, told whether a write is among them)
// and, once none is, that another owner is granted at once (grant, whose
// lease it unlocks).
func releaseEach(t testing.TB, first *fairrw.Lease, m1, m2 fairrw.Mode, order [3]int, keepOut func(write bool), grant func() *fairrw.Lease) {
	t.Helper()
	holds := []*fairrw.Lease{first, holdInTime(t, first, m1, fairrw.WithLease(furtherShort)), hold(t, first, m2)}
	keepOut(anyWrite(holds))
	for i, idx := range order {
		l := holds[idx]
		if err := l.Unlock(ctx(t)); err != nil {
			// Only the short hold may have run out by now.
			if idx != 1 || !errors.Is(err, fairrw.ErrNotHeld) || !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("order %v: Unlock of hold %d (%s): %v", order, idx, hidden.Mode(l), err)
			}
		}
		var live []*fairrw.Lease
		for _, j := range order[i+1:] {
			if j != 1 {
				live = append(live, holds[j])
			}
		}
		if len(live) > 0 {
			time.Sleep(furtherCut) // a lease cut to the short one, or set to the Client's, would run out
			for _, l := range live {
				alive(t, l)
			}
			keepOut(anyWrite(live))
			continue
		}
		// The last live hold is gone: the lock is free at once.
		next := grant()
		for _, j := range order[i+1:] { // the short hold, run out by now
			if err := holds[j].Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
				t.Fatalf("order %v: Unlock of the run-out short hold: %v, want ErrNotHeld", order, err)
			}
		}
		alive(t, next)
		keepOut(true)
		unlock(t, next)
		return
	}
}

func anyWrite(leases []*fairrw.Lease) bool {
	for _, l := range leases {
		if hidden.Mode(l) == fairrw.Write {
			return true
		}
	}
	return false
}

// holdInTime takes a further hold as hold does, and tries again, up to 5
// times, when Redis granted it too late for its lease (ErrNotAcquired: a
// grant answered after its lease ran out is given back): on a loaded
// machine, two suites side by side, a further hold of furtherShort was
// answered more than 500 ms after it was sent. What the cases check is
// what the hold does to the others once it is granted, and a refusal of
// another kind still fails at once.
func holdInTime(t testing.TB, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	for try := 1; try < 5; try++ {
		nl, err := further(ctx(t), l, mode, opts...)
		if err == nil {
			checkFurther(t, l, nl, mode)
			return nl
		}
		if !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Fatalf("further %s from a %s lease on %s: %v", mode, hidden.Mode(l), hidden.Name(l), err)
		}
		t.Logf("further %s, try %d: %v; trying again", mode, try, err)
	}
	return hold(t, l, mode, opts...)
}
