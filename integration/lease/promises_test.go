package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestGrantHonoursWithLease: a writer that waited with a lease of its own
// is granted that lease counted from the grant (not from its last refused
// attempt), in another Client and in the releasing one: its Deadline is a
// whole lease away, nobody else gets in before it, and Redis lets the next
// owner in right after it, not at the end of the waiter's queue entry.
func TestGrantHonoursWithLease(t *testing.T) {
	r := redistest.Start(t)
	itest.ForFairPolicies(t, r, "promise-lease", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		for _, local := range []bool{false, true} {
			t.Run("local="+strconv.FormatBool(local), func(t *testing.T) {
				ctl := lateness.Start(t)
				const lease = 1500 * time.Millisecond
				holderC := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
				waiterC := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
				if local {
					waiterC = holderC
				}
				other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
				h := itest.MustLock(t, holderC.RWMutex(name), fairrw.Write)
				out := make(chan itest.Acquired, 1)
				before := itest.QueueLen(t, raw, name)
				go func() {
					l, err := waiterC.RWMutex(name).Lock(itest.TestCtx(t), fairrw.WithLease(lease))
					out <- itest.Acquired{L: l, Err: err}
				}()
				for itest.QueueLen(t, raw, name) <= before {
					time.Sleep(2 * time.Millisecond)
				}
				time.Sleep(700 * time.Millisecond) // the waiter's refusal grows old
				released := time.Now()
				itest.MustUnlock(t, h)
				got := <-out
				if got.Err != nil {
					t.Fatal(got.Err)
				}
				if left := got.L.Deadline().Sub(released); left < lease {
					t.Fatalf("granted a Deadline %v after the release; want the whole lease %v from the grant", left, lease)
				}
				// Nobody gets in before the Deadline...
				time.Sleep(time.Until(got.L.Deadline().Add(-200 * time.Millisecond)))
				if l, err := other.RWMutex(name).TryLock(itest.TestCtx(t)); err == nil {
					t.Fatalf("another owner got the write %v before the granted lease's Deadline", time.Until(got.L.Deadline()))
				} else if !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatal(err)
				} else if l != nil {
					t.Fatal("a Lease with an error")
				}
				// ...and Redis keeps it no longer than the lease (and its
				// margin): the next owner gets in right after.
				select {
				case <-got.L.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("the granted lease's Done never closed")
				}
				next, err := other.RWMutex(name).Lock(itest.CtxFor(t, 2*time.Second))
				if err != nil {
					t.Fatalf("the next writer after the granted lease ran out: %v", err)
				}
				ctl.Within("the next writer granted after the granted lease's Deadline", time.Since(got.L.Deadline()), time.Second)
				itest.MustUnlock(t, next)
			})
		}
	})
}

// TestGrantFIFOWithShortLease: a writer with a short lease of its own that
// queued first is served before the writer that queued second, and a
// writer with a 50 ms lease behind two writers taking turns is granted in
// its turn, not starved.
func TestGrantFIFOWithShortLease(t *testing.T) {
	r := redistest.Start(t)
	itest.ForFairPolicies(t, r, "promise-fifo", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		// Cohorts off: strict FIFO across owners is what this checks.
		a := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithCohorts(false))
		b := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
		h := itest.MustLock(t, a.RWMutex(name), fairrw.Write)
		first := make(chan itest.Acquired, 1)
		before := itest.QueueLen(t, raw, name)
		go func() {
			l, err := b.RWMutex(name).Lock(itest.TestCtx(t), fairrw.WithLease(50*time.Millisecond))
			first <- itest.Acquired{L: l, Err: err}
		}()
		for itest.QueueLen(t, raw, name) <= before {
			time.Sleep(2 * time.Millisecond)
		}
		second := itest.QueueWriter(t, itest.TestCtx(t), raw, a.RWMutex(name))
		time.Sleep(100 * time.Millisecond)
		itest.MustUnlock(t, h)
		f := <-first
		if f.Err != nil {
			t.Fatal(f.Err)
		}
		s := <-second
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		if f.L.Token() >= s.L.Token() {
			t.Fatalf("the writer queued second got token %d, not after the first's %d: FIFO broken", s.L.Token(), f.L.Token())
		}
		_ = f.L.Unlock(itest.TestCtx(t)) // its 50 ms may have run out
		itest.MustUnlock(t, s.L)

		// Two writers take turns; one with a 50 ms lease must get its turn.
		stop := make(chan struct{})
		done := make(chan int, 2)
		for _, c := range []*fairrw.Client{a, a} {
			go func() {
				n := 0
				for {
					select {
					case <-stop:
						done <- n
						return
					default:
					}
					l, err := c.RWMutex(name).Lock(itest.CtxFor(t, 5*time.Second))
					if err != nil {
						done <- n
						return
					}
					time.Sleep(2 * time.Millisecond)
					_ = l.Unlock(itest.TestCtx(t))
					n++
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		short, err := b.RWMutex(name).Lock(itest.CtxFor(t, 4*time.Second), fairrw.WithLease(50*time.Millisecond))
		close(stop)
		turns := <-done + <-done
		if err != nil {
			t.Fatalf("a writer with a 50 ms lease behind two writers taking turns (%d turns): %v", turns, err)
		}
		_ = short.Unlock(itest.TestCtx(t))
		// A 50 ms lease may have run out before its Unlock, leaving the
		// lock's state to its horizon: the last hold of an idle lock
		// deletes it.
		itest.MustUnlock(t, itest.MustLock(t, a.RWMutex(name), fairrw.Write))
	})
}

// TestSyncReplicasGrantOnRelease: under WithSyncReplicas a grant made on
// release (to a waiter in another Client) or handed over in the releasing
// Client waits for the replicas as a direct grant does: with the replica
// cut off, the waiter gets ErrNotReplicated, not a Lease, and the lock is
// free afterwards.
func TestSyncReplicasGrantOnRelease(t *testing.T) {
	primary := redistest.StartProcess(t)
	host, port, _ := strings.Cut(primary.Addr, ":")
	replica := redistest.StartProcess(t, "--replicaof", host, port)
	raw := itest.FRaw(t, primary)
	waitReplicas(t, raw, 1)
	const timeout = 100 * time.Millisecond
	for _, p := range itest.FairPolicies {
		for _, local := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/local=%v", p, local), func(t *testing.T) {
				name := fmt.Sprintf("promise-sync:%s:%v", p, local)
				holderC := itest.NewClient(t, primary, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, time.Second))
				waiterC := itest.NewClient(t, primary, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, timeout))
				if local {
					waiterC = holderC
				}
				plain := itest.NewClient(t, primary, itest.Transports[0], fairrw.WithPolicy(p))
				h := itest.MustLock(t, holderC.RWMutex(name), fairrw.Write) // replicated
				w := itest.QueueWriter(t, itest.TestCtx(t), raw, waiterC.RWMutex(name))
				replica.Pause(t) // the replica stops acknowledging
				itest.MustUnlock(t, h)
				got := <-w
				replica.Resume(t)
				if !errors.Is(got.Err, fairrw.ErrNotReplicated) {
					if got.L != nil {
						_ = got.L.Unlock(itest.TestCtx(t))
					}
					t.Fatalf("a grant on release with the replica cut off: %v, want ErrNotReplicated", got.Err)
				}
				// The grant was given back: another owner gets the write.
				l, err := plain.RWMutex(name).Lock(itest.CtxFor(t, 3*time.Second))
				if err != nil {
					t.Fatalf("after the refused grant: %v", err)
				}
				itest.MustUnlock(t, l)
				itest.EventuallyNoLockKeys(t, raw, name)
			})
		}
	}
}

// waitReplicas waits until the primary has n replicas in sync.
func waitReplicas(t *testing.T, raw rueidis.Client, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := raw.Do(context.Background(), raw.B().Wait().Numreplicas(n).Timeout(100).Build()).AsInt64()
		if err == nil && got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replicas never in sync (%d, %v)", n, got, err)
		}
	}
}

// TestPhaseFairEveryWriteEndAdmitsReaders: under PhaseFair, whichever way
// a write ends (Unlock, ForceUnlock, its lease running out), the readers
// waiting at that moment enter before the writer queued after them.
func TestPhaseFairEveryWriteEndAdmitsReaders(t *testing.T) {
	r := redistest.Start(t)
	raw := itest.FRaw(t, r)
	p := fairrw.PhaseFair()
	for _, end := range []string{"unlock", "force-unlock", "expiry"} {
		t.Run(end, func(t *testing.T) {
			name := "promise-pf:" + end
			a := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			b := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			var opts []fairrw.AcquireOption
			if end == "expiry" {
				opts = append(opts, fairrw.WithLease(time.Second))
			}
			h := itest.MustLock(t, a.RWMutex(name), fairrw.Write, opts...)
			reader := make(chan itest.Acquired, 1)
			go func() {
				l, err := b.RWMutex(name).RLock(itest.TestCtx(t))
				reader <- itest.Acquired{L: l, Err: err}
			}()
			time.Sleep(100 * time.Millisecond) // the reader waits
			w2 := itest.QueueWriter(t, itest.TestCtx(t), raw, b.RWMutex(name))
			switch end {
			case "unlock":
				itest.MustUnlock(t, h)
			case "force-unlock":
				if err := b.RWMutex(name).ForceUnlock(itest.TestCtx(t), fairrw.Write); err != nil {
					t.Fatal(err)
				}
			}
			var rd itest.Acquired
			select {
			case rd = <-reader:
			case got := <-w2:
				if got.L != nil {
					_ = got.L.Unlock(itest.TestCtx(t))
				}
				t.Fatalf("after the write's %s, the writer queued later entered before the waiting reader", end)
			case <-time.After(5 * time.Second):
				t.Fatalf("after the write's %s, the waiting reader never entered", end)
			}
			if rd.Err != nil {
				t.Fatal(rd.Err)
			}
			select {
			case got := <-w2:
				t.Fatalf("the writer entered beside the admitted reader: %v", got.Err)
			case <-time.After(50 * time.Millisecond):
			}
			itest.MustUnlock(t, rd.L)
			got := <-w2
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			itest.MustUnlock(t, got.L)
			if end == "unlock" || end == "expiry" {
				_ = h.Unlock(itest.TestCtx(t))
			}
			itest.EventuallyNoLockKeys(t, raw, name)
		})
	}
}

// TestServerKeepsEveryHoldPastDeadline: on every path that writes a hold
// (a grant, a further hold, the release of another hold of the same
// owner, a downgrade), with leases that are not whole milliseconds, Redis
// keeps the hold at least LeaseMargin past the Lease's Deadline, so nobody
// can be let in before it.
func TestServerKeepsEveryHoldPastDeadline(t *testing.T) {
	r := redistest.Start(t)
	rng := rand.New(rand.NewPCG(1, 2))
	odd := func(base time.Duration) time.Duration {
		return base + time.Duration(rng.IntN(int(time.Millisecond)))
	}
	type target struct {
		name string
		p    fairrw.Policy
		lock func(c *fairrw.Client, name string, opts ...fairrw.AcquireOption) (*fairrw.Lease, error)
	}
	var targets []target
	for _, p := range itest.Policies {
		targets = append(targets, target{p.String(), p, func(c *fairrw.Client, name string, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
			return c.RWMutex(name).Lock(itest.TestCtx(t), opts...)
		}})
	}
	targets = append(targets, target{"mutex", fairrw.Redisson(), func(c *fairrw.Client, name string, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
		return c.Mutex(name).Lock(itest.TestCtx(t), opts...)
	}})
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(tg.p))
			name := "promise-margin:" + tg.name
			check := func(what string, l *fairrw.Lease) {
				t.Helper()
				info, err := c.Inspect(itest.TestCtx(t), name)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range info.Holders {
					if h.Owner != l.Owner() || h.Mode != hidden.Mode(l) {
						continue
					}
					// Inspect's Remaining counts in whole ms from a clock
					// read once per script: allow 2 ms of rounding (the
					// flaw this catches left the hold short of Deadline).
					end := info.Time.Add(h.Remaining)
					if short := l.Deadline().Add(hidden.LeaseMargin - 2*time.Millisecond).Sub(end); short > 0 {
						t.Fatalf("%s: Redis keeps the %s hold until %v, %v short of Deadline + LeaseMargin", what, hidden.Mode(l), end, short)
					}
					return
				}
				t.Fatalf("%s: no %s holder %s in %+v", what, hidden.Mode(l), l.Owner(), info.Holders)
			}
			for i := 0; i < 20; i++ {
				outer, err := tg.lock(c, name, fairrw.WithLease(odd(2*time.Second)))
				if err != nil {
					t.Fatal(err)
				}
				check("grant", outer)
				inner := itest.MustFurther(t, outer, fairrw.Write, fairrw.WithLease(odd(time.Second)))
				check("further hold", inner)
				itest.MustUnlock(t, inner)
				check("release of another hold", outer)
				if tg.name != "mutex" {
					rd := itest.MustFurther(t, outer, fairrw.Read, fairrw.WithLease(odd(3*time.Second)))
					check("downgrade", rd)
					itest.MustUnlock(t, outer)
					check("release of the write beside a read", rd)
					itest.MustUnlock(t, rd)
				} else {
					itest.MustUnlock(t, outer)
				}
			}
		})
	}
}

// TestOneMillisecondLease: a lease of 1 ms is made safe: no other owner is
// let in before its Deadline, on any policy.
func TestOneMillisecondLease(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			a := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			b := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "promise-1ms:" + p.String()
			early := 0
			for i := 0; i < 300; i++ {
				w, err := a.RWMutex(name).Lock(itest.TestCtx(t), fairrw.WithLease(time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				l, err := b.RWMutex(name).TryRLock(itest.TestCtx(t))
				returned := time.Now()
				if err == nil {
					if returned.Before(w.Deadline()) {
						early++
					}
					_ = l.Unlock(itest.TestCtx(t))
				} else if !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatal(err)
				}
				_ = w.Unlock(itest.TestCtx(t))
			}
			if early > 0 {
				t.Fatalf("%d of 300 reads were granted before a 1 ms write's Deadline", early)
			}
		})
	}
}
