package fairrw

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestNothingKeptAfterBusyRuns: after every sequence the API allows on one
// name from many goroutines of one Client (cohort writes, shared reads,
// reentrant and downgraded holds with their own leases, TryLocks,
// cancellations at random, Unlocks twice), once every call returned and
// every Lease was unlocked, the Client keeps nothing of them: no owner it
// believes Redis may keep a hold of (heldOwners), no cohort, no
// subscription a busy cohort kept, no shared read; and the name is free.
// Under both policies that have cohorts, on a redis-server (client
// tracking: the cohorts learn who waits).
func TestNothingKeptAfterBusyRuns(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range []Policy{WriterPreferring(), PhaseFair()} {
		t.Run(p.String(), func(t *testing.T) {
			// A further hold whose short lease ran out before its Unlock (a
			// loaded machine) ends with no Redis call, and its owner stays
			// among the held until what Redis may keep of it has passed
			// (owner.keep: a renewal of the owner's watchdog hold sent
			// before its release may still have landed): the lease time
			// from the last renewal. A lease time of 3 s keeps that wait
			// short.
			c, err := New(WithClientOption(r.ClientOption()), WithPolicy(p), WithLeaseTime(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			name := "kept:" + p.String()
			m := c.RWMutex(name)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 7))
					for range 40 {
						busyStep(t, rng, m)
					}
				})
			}
			wg.Wait()
			// A release that found Redis slow goes on in the background for
			// up to the unlock timeout (a loaded machine kept one owner past
			// 5 s), and an owner whose last Lease ran out stays until its
			// keep: that long, and 5 s more.
			deadline := time.Now().Add(c.conf.unlockTimeout + c.acceptWindow() + c.conf.leaseTime + leaseMargin + 5*time.Second)
			for {
				held, cohorts, groups, shares := c.kept()
				if held == 0 && cohorts == 0 && groups == 0 && shares == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after every Lease was unlocked the Client keeps %d held owners (kept for %v more at most), %d cohorts, %d wait groups, %d shared reads",
						held, c.latestKeep(), cohorts, groups, shares)
				}
				time.Sleep(10 * time.Millisecond) // declined passes and give-backs end in the background
			}
			l, err := m.TryLock(context.Background())
			if err != nil {
				t.Fatalf("the name is not free after the runs: %v", err)
			}
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// busyStep is one random step of TestNothingKeptAfterBusyRuns: a Lock or an
// RLock (sometimes cancelled at once, or soon), held a moment, with a
// further hold of its own lease now and then, unlocked (sometimes twice).
func busyStep(t *testing.T, rng *rand.Rand, m *RWMutex) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch rng.IntN(10) {
	case 0:
		cancel() // given up at once
	case 1:
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, time.Duration(rng.IntN(3))*time.Millisecond)
		defer c2()
	}
	var l *Lease
	var err error
	switch rng.IntN(4) {
	case 0:
		l, err = m.RLock(ctx)
	case 1:
		l, err = m.TryLock(ctx)
	default:
		l, err = m.Lock(ctx)
	}
	if err != nil {
		return
	}
	var further *Lease
	if rng.IntN(4) == 0 {
		mode := Read
		if l.mode == Write && rng.IntN(2) == 0 {
			mode = Write
		}
		var ferr error
		if mode == Read {
			further, ferr = l.RLock(context.Background(), WithLease(time.Duration(50+rng.IntN(200))*time.Millisecond))
		} else {
			further, ferr = l.Lock(context.Background(), WithLease(time.Duration(50+rng.IntN(200))*time.Millisecond))
		}
		if ferr != nil {
			further = nil
		}
	}
	time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
	if further != nil && rng.IntN(2) == 0 {
		_ = further.Unlock(context.Background())
		further = nil
	}
	if err := l.Unlock(context.Background()); err != nil && l.Err() == nil {
		t.Errorf("Unlock: %v", err)
	}
	if rng.IntN(8) == 0 {
		_ = l.Unlock(context.Background()) // twice: ErrNotHeld
	}
	if further != nil {
		_ = further.Unlock(context.Background())
	}
}

// latestKeep returns how long from now the latest keep of the Client's
// held owners lasts.
func (c *Client) latestKeep() time.Duration {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	var latest int64
	for o := range c.held.m {
		latest = max(latest, o.keep.Load())
	}
	return time.Until(time.Unix(0, latest))
}

// kept returns what the Client keeps of its locks: owners Redis may keep
// a hold of, cohorts, wait groups, shared reads.
func (c *Client) kept() (held, cohorts, groups, shares int) {
	c.held.mu.Lock()
	held = len(c.held.m)
	c.held.mu.Unlock()
	c.cohorts.mu.Lock()
	cohorts = len(c.cohorts.m)
	c.cohorts.mu.Unlock()
	groups = c.waits.Groups()
	c.shares.mu.Lock()
	shares = len(c.shares.byName)
	c.shares.mu.Unlock()
	return held, cohorts, groups, shares
}
