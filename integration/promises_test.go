package integration

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
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/redistest"
)

// The promises a grant on release keeps whatever the waiter asked for
// (its lease, its place in the queue, its replicas), whichever way the
// previous hold ended (Unlock, ForceUnlock, expiry), and the margin Redis
// keeps past every Deadline.

// TestGrantHonoursWithLease: a writer that waited with a lease of its own
// is granted that lease counted from the grant (not from its last refused
// attempt), in another Client and in the releasing one: its Deadline is a
// whole lease away, nobody else gets in before it, and Redis lets the next
// owner in right after it, not at the end of the waiter's queue entry.
func TestGrantHonoursWithLease(t *testing.T) {
	r := redistest.Start(t)
	forFairPolicies(t, r, "promise-lease", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		for _, local := range []bool{false, true} {
			t.Run("local="+strconv.FormatBool(local), func(t *testing.T) {
				ctl := startLateness(t)
				const lease = 1500 * time.Millisecond
				holderC := newClient(t, r, transports[0], fairrw.WithPolicy(p))
				waiterC := newClient(t, r, transports[0], fairrw.WithPolicy(p))
				if local {
					waiterC = holderC
				}
				other := newClient(t, r, transports[0], fairrw.WithPolicy(p))
				h := mustLock(t, holderC.RWMutex(name), fairrw.Write)
				out := make(chan acquired, 1)
				before := queueLen(t, raw, name)
				go func() {
					l, err := waiterC.RWMutex(name).Lock(testCtx(t), fairrw.WithLease(lease))
					out <- acquired{l, err}
				}()
				for queueLen(t, raw, name) <= before {
					time.Sleep(2 * time.Millisecond)
				}
				time.Sleep(700 * time.Millisecond) // the waiter's refusal grows old
				released := time.Now()
				mustUnlock(t, h)
				got := <-out
				if got.err != nil {
					t.Fatal(got.err)
				}
				if left := got.l.Deadline().Sub(released); left < lease {
					t.Fatalf("granted a Deadline %v after the release; want the whole lease %v from the grant", left, lease)
				}
				// Nobody gets in before the Deadline...
				time.Sleep(time.Until(got.l.Deadline().Add(-200 * time.Millisecond)))
				if l, err := other.RWMutex(name).TryLock(testCtx(t)); err == nil {
					t.Fatalf("another owner got the write %v before the granted lease's Deadline", time.Until(got.l.Deadline()))
				} else if !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatal(err)
				} else if l != nil {
					t.Fatal("a Lease with an error")
				}
				// ...and Redis keeps it no longer than the lease (and its
				// margin): the next owner gets in right after.
				select {
				case <-got.l.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("the granted lease's Done never closed")
				}
				next, err := other.RWMutex(name).Lock(ctxFor(t, 2*time.Second))
				if err != nil {
					t.Fatalf("the next writer after the granted lease ran out: %v", err)
				}
				ctl.within("the next writer granted after the granted lease's Deadline", time.Since(got.l.Deadline()), time.Second)
				mustUnlock(t, next)
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
	forFairPolicies(t, r, "promise-fifo", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		// Cohorts off: strict FIFO across owners is what this checks.
		a := newClient(t, r, transports[0], fairrw.WithPolicy(p), fairrw.WithCohorts(false))
		b := newClient(t, r, transports[0], fairrw.WithPolicy(p))
		h := mustLock(t, a.RWMutex(name), fairrw.Write)
		first := make(chan acquired, 1)
		before := queueLen(t, raw, name)
		go func() {
			l, err := b.RWMutex(name).Lock(testCtx(t), fairrw.WithLease(50*time.Millisecond))
			first <- acquired{l, err}
		}()
		for queueLen(t, raw, name) <= before {
			time.Sleep(2 * time.Millisecond)
		}
		second := queueWriter(t, testCtx(t), raw, a.RWMutex(name))
		time.Sleep(100 * time.Millisecond)
		mustUnlock(t, h)
		f := <-first
		if f.err != nil {
			t.Fatal(f.err)
		}
		s := <-second
		if s.err != nil {
			t.Fatal(s.err)
		}
		if f.l.Token() >= s.l.Token() {
			t.Fatalf("the writer queued second got token %d, not after the first's %d: FIFO broken", s.l.Token(), f.l.Token())
		}
		_ = f.l.Unlock(testCtx(t)) // its 50 ms may have run out
		mustUnlock(t, s.l)

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
					l, err := c.RWMutex(name).Lock(ctxFor(t, 5*time.Second))
					if err != nil {
						done <- n
						return
					}
					time.Sleep(2 * time.Millisecond)
					_ = l.Unlock(testCtx(t))
					n++
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		short, err := b.RWMutex(name).Lock(ctxFor(t, 4*time.Second), fairrw.WithLease(50*time.Millisecond))
		close(stop)
		turns := <-done + <-done
		if err != nil {
			t.Fatalf("a writer with a 50 ms lease behind two writers taking turns (%d turns): %v", turns, err)
		}
		_ = short.Unlock(testCtx(t))
		// A 50 ms lease may have run out before its Unlock, leaving the
		// lock's state to its horizon: the last hold of an idle lock
		// deletes it.
		mustUnlock(t, mustLock(t, a.RWMutex(name), fairrw.Write))
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
	raw := fRaw(t, primary)
	waitReplicas(t, raw, 1)
	const timeout = 100 * time.Millisecond
	for _, p := range fairPolicies {
		for _, local := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/local=%v", p, local), func(t *testing.T) {
				name := fmt.Sprintf("promise-sync:%s:%v", p, local)
				holderC := newClient(t, primary, transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, time.Second))
				waiterC := newClient(t, primary, transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, timeout))
				if local {
					waiterC = holderC
				}
				plain := newClient(t, primary, transports[0], fairrw.WithPolicy(p))
				h := mustLock(t, holderC.RWMutex(name), fairrw.Write) // replicated
				w := queueWriter(t, testCtx(t), raw, waiterC.RWMutex(name))
				replica.Pause(t) // the replica stops acknowledging
				mustUnlock(t, h)
				got := <-w
				replica.Resume(t)
				if !errors.Is(got.err, fairrw.ErrNotReplicated) {
					if got.l != nil {
						_ = got.l.Unlock(testCtx(t))
					}
					t.Fatalf("a grant on release with the replica cut off: %v, want ErrNotReplicated", got.err)
				}
				// The grant was given back: another owner gets the write.
				l, err := plain.RWMutex(name).Lock(ctxFor(t, 3*time.Second))
				if err != nil {
					t.Fatalf("after the refused grant: %v", err)
				}
				mustUnlock(t, l)
				eventuallyNoLockKeys(t, raw, name)
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
	raw := fRaw(t, r)
	p := fairrw.PhaseFair()
	for _, end := range []string{"unlock", "force-unlock", "expiry"} {
		t.Run(end, func(t *testing.T) {
			name := "promise-pf:" + end
			a := newClient(t, r, transports[0], fairrw.WithPolicy(p))
			b := newClient(t, r, transports[0], fairrw.WithPolicy(p))
			var opts []fairrw.AcquireOption
			if end == "expiry" {
				opts = append(opts, fairrw.WithLease(time.Second))
			}
			h := mustLock(t, a.RWMutex(name), fairrw.Write, opts...)
			reader := make(chan acquired, 1)
			go func() {
				l, err := b.RWMutex(name).RLock(testCtx(t))
				reader <- acquired{l, err}
			}()
			time.Sleep(100 * time.Millisecond) // the reader waits
			w2 := queueWriter(t, testCtx(t), raw, b.RWMutex(name))
			switch end {
			case "unlock":
				mustUnlock(t, h)
			case "force-unlock":
				if err := b.RWMutex(name).ForceUnlock(testCtx(t), fairrw.Write); err != nil {
					t.Fatal(err)
				}
			}
			var rd acquired
			select {
			case rd = <-reader:
			case got := <-w2:
				if got.l != nil {
					_ = got.l.Unlock(testCtx(t))
				}
				t.Fatalf("after the write's %s, the writer queued later entered before the waiting reader", end)
			case <-time.After(5 * time.Second):
				t.Fatalf("after the write's %s, the waiting reader never entered", end)
			}
			if rd.err != nil {
				t.Fatal(rd.err)
			}
			select {
			case got := <-w2:
				t.Fatalf("the writer entered beside the admitted reader: %v", got.err)
			case <-time.After(50 * time.Millisecond):
			}
			mustUnlock(t, rd.l)
			got := <-w2
			if got.err != nil {
				t.Fatal(got.err)
			}
			mustUnlock(t, got.l)
			if end == "unlock" || end == "expiry" {
				_ = h.Unlock(testCtx(t))
			}
			eventuallyNoLockKeys(t, raw, name)
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
	for _, p := range policies {
		targets = append(targets, target{p.String(), p, func(c *fairrw.Client, name string, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
			return c.RWMutex(name).Lock(testCtx(t), opts...)
		}})
	}
	targets = append(targets, target{"mutex", fairrw.Redisson(), func(c *fairrw.Client, name string, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
		return c.Mutex(name).Lock(testCtx(t), opts...)
	}})
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			c := newClient(t, r, transports[0], fairrw.WithPolicy(tg.p))
			name := "promise-margin:" + tg.name
			check := func(what string, l *fairrw.Lease) {
				t.Helper()
				info, err := c.Inspect(testCtx(t), name)
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
				inner := mustFurther(t, outer, fairrw.Write, fairrw.WithLease(odd(time.Second)))
				check("further hold", inner)
				mustUnlock(t, inner)
				check("release of another hold", outer)
				if tg.name != "mutex" {
					rd := mustFurther(t, outer, fairrw.Read, fairrw.WithLease(odd(3*time.Second)))
					check("downgrade", rd)
					mustUnlock(t, outer)
					check("release of the write beside a read", rd)
					mustUnlock(t, rd)
				} else {
					mustUnlock(t, outer)
				}
			}
		})
	}
}

// TestOneMillisecondLease: a lease of 1 ms is made safe: no other owner is
// let in before its Deadline, on any policy.
func TestOneMillisecondLease(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			a := newClient(t, r, transports[0], fairrw.WithPolicy(p))
			b := newClient(t, r, transports[0], fairrw.WithPolicy(p))
			name := "promise-1ms:" + p.String()
			early := 0
			for i := 0; i < 300; i++ {
				w, err := a.RWMutex(name).Lock(testCtx(t), fairrw.WithLease(time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				l, err := b.RWMutex(name).TryRLock(testCtx(t))
				returned := time.Now()
				if err == nil {
					if returned.Before(w.Deadline()) {
						early++
					}
					_ = l.Unlock(testCtx(t))
				} else if !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatal(err)
				}
				_ = w.Unlock(testCtx(t))
			}
			if early > 0 {
				t.Fatalf("%d of 300 reads were granted before a 1 ms write's Deadline", early)
			}
		})
	}
}
