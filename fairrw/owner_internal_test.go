package fairrw

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestReleaseBesideARenewalKeepsTheRenewedHold: a release that writes back
// what its owner's other Leases hold runs beside the watchdog, which does
// not take the owner's lock. Here a renewal of the owner's watchdog Lease
// reaches Redis, the owner releases a further hold while the renewal's
// answer is on its way, and then the answer moves the Lease's Deadline.
// Redis must keep the hold past that Deadline (and the lease margin):
// the release's write-back must not set the hold back to the deadline the
// Lease had before the renewal (the conformance test's redis/kept-short).
// Every policy and both modes of the watchdog Lease, and a release written
// again in the background (RWMutex.restate) as well.
func TestReleaseBesideARenewalKeepsTheRenewedHold(t *testing.T) {
	// A redis-server: miniredis counts a TTL down from its own clock
	// reading, which a loaded machine takes late, and the check here is to
	// the millisecond.
	opt := redistest.Start(t).ClientOption()
	type kind struct {
		name   string
		policy Policy
		mode   Mode // of the watchdog Lease, and its further hold
		lock   func(c *Client, name string) (*Lease, error)
	}
	ctx := context.Background()
	var kinds []kind
	for _, p := range []Policy{Redisson(), WriterPreferring(), PhaseFair()} {
		for _, mode := range []Mode{Write, Read} {
			kinds = append(kinds, kind{p.String() + "/" + mode.String(), p, mode, func(c *Client, name string) (*Lease, error) {
				if mode == Read {
					return c.RWMutex(name).RLock(ctx)
				}
				return c.RWMutex(name).Lock(ctx)
			}})
		}
	}
	kinds = append(kinds, kind{"mutex", Redisson(), Write, func(c *Client, name string) (*Lease, error) {
		return c.Mutex(name).Lock(ctx)
	}})
	for _, k := range kinds {
		for _, how := range []string{"unlock", "restate"} {
			t.Run(k.name+"/"+how, func(t *testing.T) {
				c, err := New(WithClientOption(opt), WithPolicy(k.policy))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				name := "renewed-beside-release:" + k.name + ":" + how
				wd, err := k.lock(c, name)
				if err != nil {
					t.Fatal(err)
				}
				inner, err := wd.further(ctx, k.mode, []AcquireOption{WithLease(20 * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				// The watchdog Lease was last confirmed a while ago: it has
				// 2 s left of the lease time (30 s), as between rounds.
				wd.mu.Lock()
				wd.deadline = time.Now().Add(2 * time.Second)
				wd.mu.Unlock()
				// A renewal round reaches Redis; its answer is not read yet.
				r := c.leaseRenewer()
				sent := time.Now()
				calls, _ := r.batches([]*renewHold{{m: wd.m, owner: wd.own.id, mode: wd.mode, leases: []*Lease{wd}}})
				for _, res := range script.Batch(ctx, c.redis(), calls) {
					if err := res.Error(); err != nil {
						t.Fatal(err)
					}
				}
				switch how {
				case "unlock":
					if err := inner.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				case "restate":
					// The further hold's outcome was never learned: its owner
					// writes back what its Leases hold (inner is not one).
					inner.mu.Lock()
					inner.state = leaseEnded
					inner.mu.Unlock()
					o := wd.own
					if err := o.lock(ctx); err != nil {
						t.Fatal(err)
					}
					wd.m.restate(o, k.mode, 20*time.Second, time.Time{})
					o.unlock()
				}
				wd.confirm(sent.Add(c.settings().leaseTime)) // the renewal's answer
				info, err := c.Inspect(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range info.Holders {
					if h.Owner != wd.Owner() || h.Mode != k.mode {
						continue
					}
					end := info.Time.Add(h.Remaining)
					if short := wd.Deadline().Add(leaseMargin - 2*time.Millisecond).Sub(end); short > 0 {
						t.Fatalf("Redis keeps the hold until %v, %v short of the renewed Deadline + LeaseMargin", end, short)
					}
					if err := wd.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Fatalf("no %s holder %s in %+v", k.mode, wd.Owner(), info.Holders)
			})
		}
	}
}

// TestRedisKeepsEveryLiveLeaseUnderChurn: one owner holds a watchdog
// Lease renewed every 100 ms while, on the same owner, further holds of
// both modes (explicit leases of 50-500 ms, or the watchdog's) are taken
// and released in random order, so that releases writing the owner's state
// back race renewal rounds all the time. After every change, Redis keeps
// each of the owner's live Leases at least until its Deadline (read before
// the look) and the lease margin: no write-back sets a renewed hold back,
// and none confirms a renewal that Redis did not get. Every policy and
// the Mutex, on a redis-server.
func TestRedisKeepsEveryLiveLeaseUnderChurn(t *testing.T) {
	// It mostly waits on renewal rounds: beside the other parallel tests,
	// each kind beside the others, each on its own name.
	t.Parallel()
	opt := redistest.Start(t).ClientOption()
	ctx := context.Background()
	type kind struct {
		name   string
		policy Policy
		mutex  bool
	}
	kinds := []kind{{"mutex", Redisson(), true}}
	for _, p := range []Policy{Redisson(), WriterPreferring(), PhaseFair()} {
		kinds = append(kinds, kind{p.String(), p, false})
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(WithClientOption(opt), WithPolicy(k.policy), WithLeaseTime(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(7, uint64(len(k.name))))
			name := "churn:" + k.name
			lock := func() *Lease {
				var l *Lease
				var err error
				if k.mutex {
					l, err = c.Mutex(name).Lock(ctx)
				} else {
					l, err = c.RWMutex(name).Lock(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			// check fails t if Redis keeps less of a live Lease than its
			// Deadline and the margin, as Inspect sees it.
			check := func(step int, what string, leases []*Lease) {
				t.Helper()
				deadlines := map[Mode]time.Time{}
				for _, l := range leases {
					if l.Err() == nil && !l.Deadline().Before(deadlines[l.mode]) {
						deadlines[l.mode] = l.Deadline()
					}
				}
				info, err := c.Inspect(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				for mode, dl := range deadlines {
					if time.Until(dl) <= 0 {
						continue // ran out meanwhile: nothing to keep
					}
					found := false
					for _, h := range info.Holders {
						if h.Owner != leases[0].Owner() || h.Mode != mode {
							continue
						}
						found = true
						if short := dl.Add(leaseMargin - time.Millisecond).Sub(info.Time.Add(h.Remaining)); short > 0 {
							t.Fatalf("step %d, after %s: Redis keeps the owner's %s %v short of its live Lease's Deadline + LeaseMargin", step, what, mode, short)
						}
					}
					if !found && time.Until(dl) > 20*time.Millisecond {
						t.Fatalf("step %d, after %s: Redis keeps no %s of the owner, whose Lease has %v left; holders %+v", step, what, mode, time.Until(dl), info.Holders)
					}
				}
			}
			w := lock()
			live := []*Lease{w}
			for step := 0; step < 150; step++ {
				if w.Err() != nil { // a loaded machine lost the watchdog: start again
					for _, l := range live {
						_ = l.Unlock(ctx)
					}
					w = lock()
					live = []*Lease{w}
				}
				if len(live) < 4 && rng.IntN(2) == 0 {
					mode := Write
					if !k.mutex && rng.IntN(2) == 0 {
						mode = Read
					}
					var opts []AcquireOption
					if rng.IntN(3) != 0 {
						opts = append(opts, WithLease(time.Duration(50+rng.IntN(450))*time.Millisecond))
					}
					f, err := w.further(ctx, mode, opts)
					if err != nil {
						continue // ended meanwhile
					}
					live = append(live, f)
					check(step, "a further "+mode.String(), live)
				} else if len(live) > 1 {
					i := 1 + rng.IntN(len(live)-1)
					_ = live[i].Unlock(ctx)
					live = append(live[:i], live[i+1:]...)
					check(step, "a release", live)
				}
				time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			}
			for _, l := range live {
				_ = l.Unlock(ctx)
			}
		})
	}
}

// TestConfirmDoesNotReviveAPassedLease: a confirmation that comes after a
// Lease's deadline (a renewal round's late answer) does not move it, even
// before the Lease's timer has ended it: the owner counted the Lease out
// from its deadline on (a release of another hold wrote back no hold for
// it). One that comes before the deadline moves it.
func TestConfirmDoesNotReviveAPassedLease(t *testing.T) {
	passed := time.Now().Add(-time.Millisecond)
	l := &Lease{deadline: passed, timer: time.NewTimer(time.Hour)}
	defer l.timer.Stop()
	l.confirm(time.Now().Add(time.Second))
	if !l.deadline.Equal(passed) {
		t.Fatalf("a confirmation after the deadline moved it from %v to %v", passed, l.deadline)
	}
	live := time.Now().Add(time.Second)
	l = &Lease{deadline: live, timer: time.NewTimer(time.Hour)}
	defer l.timer.Stop()
	later := live.Add(time.Second)
	l.confirm(later)
	if !l.deadline.Equal(later) {
		t.Fatalf("a confirmation before the deadline left it at %v, want %v", l.deadline, later)
	}
}
