package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/testkit/holder"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestGrantOnRelease: the release grants the queued writer the lock. A
// waiter in another Client learns it from the release's message, one in
// the releasing Client from the Unlock's reply; neither makes another
// attempt, and each gets a greater token than the holder's. Cohorts off:
// with them a local waiter waits in the Client (cohort_test.go).
func TestGrantOnRelease(t *testing.T) {
	r := redistest.Start(t)
	raw := itest.FRaw(t, r)
	for _, p := range itest.FairPolicies {
		for _, local := range []bool{false, true} {
			t.Run(p.String()+"/local="+strconv.FormatBool(local), func(t *testing.T) {
				holderC := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithCohorts(false))
				waiterC := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
				if local {
					waiterC = holderC
				}
				var name string
				var h *fairrw.Lease
				var got itest.Acquired
				for try := 1; ; try++ {
					name = fmt.Sprintf("grant:%s:%t:%d", p, local, try)
					h = itest.MustLock(t, holderC.RWMutex(name), fairrw.Write)
					w := itest.QueueWriter(t, itest.TestCtx(t), raw, waiterC.RWMutex(name))
					// The waiter sleeps: its attempt's reply handled, it
					// waits on the grant. A machine that held its
					// goroutine up for half of that may have left it to
					// learn of the grant on its way to waiting (by an
					// attempt of its own, "woken by" nobody): such a try
					// says nothing of the grant's delivery, and is made
					// again, three at most.
					stall := locktest.MachineStall(func() { time.Sleep(50 * time.Millisecond) })
					itest.MustUnlock(t, h)
					got = <-w
					if got.Err != nil {
						t.Fatal(got.Err)
					}
					// In the releasing Client, the Unlock's reply and the
					// message race (over RESP3 the message comes first, on
					// the same connection): either hands over the grant.
					if by := hidden.WokenBy(got.L); by != "grant" && !(local && by == "reply") {
						if try < 3 && stall >= 25*time.Millisecond {
							t.Logf("try %d: woken by %q with the machine %v late while the waiter was to start waiting: again", try, by, stall)
							itest.MustUnlock(t, got.L)
							continue
						}
						t.Errorf("woken by %q, want the grant (its message or, locally, the reply; the machine's worst lateness before the release %v)", by, stall)
					}
					break
				}
				if got.L.Token() <= h.Token() {
					t.Errorf("grant token %d not above the holder's %d", got.L.Token(), h.Token())
				}
				if _, err := holderC.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatalf("TryLock while the granted writer holds: %v", err)
				}
				if time.Until(got.L.Deadline()) < 10*time.Second {
					t.Errorf("granted lease ends in %v: shorter than two thirds of the lease", time.Until(got.L.Deadline()))
				}
				// The grant is a whole hold of its owner: further holds
				// taken from it (a reentrant write, a downgrade's read)
				// outlive its Unlock in any order, and keep others out.
				w2 := itest.MustFurther(t, got.L, fairrw.Write)
				rd := itest.MustFurther(t, w2, fairrw.Read)
				itest.MustUnlock(t, got.L)
				itest.MustUnlock(t, w2)
				if _, err := holderC.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatalf("TryLock while the grant's downgrade read holds: %v", err)
				}
				itest.MustUnlock(t, rd)
				l, err := holderC.RWMutex(name).TryLock(itest.TestCtx(t))
				if err != nil {
					t.Fatalf("TryLock after every hold of the granted owner ended: %v", err)
				}
				itest.MustUnlock(t, l)
				itest.EventuallyNoLockKeys(t, raw, name)
			})
		}
	}
}

// TestGrantToGoneWaiter: a writer queued and gone (crashed: it never takes
// its grant up) is granted the lock on release, and that grant keeps the
// next writer out no longer than the gone writer's queue entry would have.
func TestGrantToGoneWaiter(t *testing.T) {
	itest.ForFairPolicies(t, redistest.Start(t), "grant:gone", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		// Cohorts off: the second writer of c queues in Redis.
		c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(3*time.Second), fairrw.WithCohorts(false))
		h := itest.MustLock(t, c.RWMutex(name), fairrw.Write)
		const entry = 1500 * time.Millisecond
		queued := time.Now()
		ghostQueue(t, raw, p, name, "ghost:1", entry)
		w := itest.QueueWriter(t, itest.TestCtx(t), raw, c.RWMutex(name))
		itest.MustUnlock(t, h) // grants the ghost, which never answers
		got := <-w
		if got.Err != nil {
			t.Fatal(got.Err)
		}
		waited := time.Since(queued)
		if waited < entry-50*time.Millisecond {
			t.Errorf("the next writer got the lock %v after the gone writer queued: inside its entry's %v", waited, entry)
		}
		if waited > entry+3*time.Second {
			t.Errorf("the next writer waited %v, past the gone writer's entry (%v) and a retry bound", waited, entry)
		}
		itest.MustUnlock(t, got.L)
	})
}

// ghostQueue queues a writer owner that will never come back, by the
// acquire script itself, with an entry that lives entry.
func ghostQueue(t *testing.T, raw rueidis.Client, p fairrw.Policy, name, owner string, entry time.Duration) {
	t.Helper()
	fk := fwire.Fair(name)
	src := lua.FairAcquire()
	ms := strconv.FormatInt(entry.Milliseconds(), 10)
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	res, err := raw.Do(context.Background(), raw.B().Eval().Script(src).Numkeys(9).
		Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fwire.Fence(name), fk.Channel, name, fwire.OwnerMarker(name, owner)).
		Arg(fwire.PolicyRecord(p.String(), fwire.Protocol), "w", owner, ms, ms, now, "10000", "publish", "1", "0").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := res[0].AsInt64(); status != 0 {
		t.Fatalf("the ghost writer was not queued: status %d", status)
	}
}

// TestGrantLostMessage: the granted waiter's subscription is cut just as
// the release publishes its grant, so the message is lost. The waiter
// still gets the lock at once (the re-made subscription makes it try
// again, and its attempt finds the grant), never after its retry bound,
// and no one else gets it meanwhile.
func TestGrantLostMessage(t *testing.T) {
	itest.ForFairPolicies(t, redistest.Start(t), "grant:lost", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		opts := []fairrw.Option{fairrw.WithPolicy(p), fairrw.WithLeaseTime(time.Minute)} // retry bound 20s
		// Under RESP3 the kill below also cuts the holder's connection
		// (it carries its subscriptions): when its Unlock's first try dies
		// with it, the release keeps its latch for the accept window (2x
		// the unlock timeout: a copy of that try may still arrive), so a
		// short unlock timeout lets forFairPolicies see it expire.
		holderC := itest.NewClient(t, r, itest.Transports[1], append(opts, fairrw.WithUnlockTimeout(time.Second))...)
		waiterC := itest.NewClient(t, r, itest.Transports[1], opts...)
		h := itest.MustLock(t, holderC.RWMutex(name), fairrw.Write)
		w := itest.QueueWriter(t, itest.TestCtx(t), raw, waiterC.RWMutex(name))
		time.Sleep(50 * time.Millisecond)
		if err := raw.Do(context.Background(), raw.B().ClientKill().TypePubsub().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		unlocked := time.Now()
		itest.MustUnlock(t, h)
		if _, err := holderC.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Fatalf("TryLock after a grant to the waiter: %v", err)
		}
		select {
		case got := <-w:
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			t.Logf("granted %v after the release, woken by %s", time.Since(unlocked).Round(time.Millisecond), hidden.WokenBy(got.L))
			itest.MustUnlock(t, got.L)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter whose grant message was lost still waits")
		}
	})
}

// TestGrantCancelRace: a waiting writer's Lock is cancelled at the moment
// the release grants it the lock, over and over, with the watchdog lease
// (the grant is used as it is) and with a lease of its own (the grant is
// taken up by one more attempt, which the cancellation may cut). Either
// the Lock returns the Lease, or it gives the grant back: the lock is free
// again at once, never held until the grant's lease or queue entry ends.
func TestGrantCancelRace(t *testing.T) {
	itest.ForFairPolicies(t, redistest.Start(t), "grant:cancel", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		for _, opts := range [][]fairrw.AcquireOption{nil, {fairrw.WithLease(10 * time.Second)}} {
			grantCancelRace(t, r, raw, p, name, opts)
		}
	})
}

func grantCancelRace(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string, opts []fairrw.AcquireOption) {
	holderC := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
	waiterC := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
	granted, cancelled := 0, 0
	for i := range 30 {
		h := itest.MustLock(t, holderC.RWMutex(name), fairrw.Write)
		ctx, cancel := context.WithCancel(context.Background())
		w := itest.QueueWriter(t, ctx, raw, waiterC.RWMutex(name), opts...)
		go func() {
			time.Sleep(time.Duration(rand.IntN(400)) * time.Microsecond)
			cancel()
		}()
		itest.MustUnlock(t, h)
		got := <-w
		cancel()
		switch {
		case got.Err == nil:
			granted++
			itest.MustUnlock(t, got.L)
		case errors.Is(got.Err, context.Canceled):
			cancelled++
		default:
			t.Fatalf("round %d: %v", i, got.Err)
		}
		// Free at once: a grant given back does not hold the lock
		// for its lease (30s).
		l, err := holderC.RWMutex(name).Lock(itest.CtxFor(t, 3*time.Second))
		if err != nil {
			t.Fatalf("round %d: the lock is not free after the cancelled waiter left: %v", i, err)
		}
		itest.MustUnlock(t, l)
	}
	t.Logf("lease options %d: %d granted, %d cancelled", len(opts), granted, cancelled)
}

// TestGrantManyWaitersCancelled: 256 writers wait on one name, on two
// Clients, and a quarter of them give up at random moments. Every other
// one is granted, one at a time, with tokens that grow in grant order,
// and nothing of the lock is left.
func TestGrantManyWaitersCancelled(t *testing.T) {
	itest.ForFairPolicies(t, redistest.Start(t), "grant:many", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		clients := []*fairrw.Client{
			itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p)),
			itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p)),
		}
		h := itest.MustLock(t, clients[0].RWMutex(name), fairrw.Write)
		const n = 256
		var (
			inside  atomic.Int32
			mu      sync.Mutex
			tokens  []uint64
			wg      sync.WaitGroup
			granted atomic.Int32
		)
		errs := make(chan error, n)
		for i := range n {
			ctx, cancel := context.WithCancel(itest.TestCtx(t))
			if i%4 == 0 {
				time.AfterFunc(time.Duration(rand.IntN(300))*time.Millisecond, cancel)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				l, err := clients[i%2].RWMutex(name).Lock(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						errs <- err
					}
					return
				}
				if inside.Add(1) != 1 {
					errs <- errors.New("two writers inside at once")
				}
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				inside.Add(-1)
				granted.Add(1)
				if err := l.Unlock(context.Background()); err != nil {
					errs <- err
				}
			}()
		}
		time.Sleep(400 * time.Millisecond) // all queued, the cancellations done
		itest.MustUnlock(t, h)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if g := granted.Load(); g < n*3/4 {
			t.Errorf("%d of %d writers granted; at most a quarter were cancelled", g, n)
		}
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Fatalf("token %d after %d in grant order", tokens[i], tokens[i-1])
			}
		}
	})
}

// TestGrantedWaiterKilled: a writer waiting in another process is granted
// the lock by a release and killed (kill -9) right after: it never unlocks
// and its watchdog stops. Its hold keeps the next writer out until its
// lease ends, no longer (and not for a queue lease of the lock's Client).
func TestGrantedWaiterKilled(t *testing.T) {
	itest.ForFairPolicies(t, redistest.StartProcess(t), "grant:killed", func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string) {
		ctl := lateness.Start(t)
		c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
		h := itest.MustLock(t, c.RWMutex(name), fairrw.Write)
		released := make(chan error, 1)
		go func() { // release once the child waits: the release grants it
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if n, err := itest.QueueLenOf(raw, name); err != nil || n > 0 {
					break
				}
			}
			released <- h.Unlock(context.Background())
		}()
		child := holder.Start(t, holder.Spec{Addr: r.Addr, Policy: p.String(), Name: name, Write: true, Lease: itest.HolderLease})
		child.Kill()
		killed := time.Now()
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		if child.Token <= h.Token() {
			t.Fatalf("the child's token %d is not above the releasing holder's %d", child.Token, h.Token())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*itest.HolderLease)
		defer cancel()
		l, err := c.RWMutex(name).Lock(ctx)
		at := time.Now()
		if err != nil {
			t.Fatalf("the next writer after the granted waiter was killed: %v", err)
		}
		if at.Before(child.Deadline) {
			t.Errorf("the next writer got the lock %v before the killed grantee's deadline", child.Deadline.Sub(at))
		}
		ctl.Within(fmt.Sprintf("the next writer granted after the kill (the %v lease +1s)", itest.HolderLease), at.Sub(killed), itest.HolderLease+time.Second)
		itest.MustUnlock(t, l)
	})
}
