package shutdown

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/faults"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestFurtherReadChurnNotLost: a write W and a downgraded read taken
// from it, unlocked and taken again from W over and over. Every read Lease
// has its hold in Redis from its grant to its Unlock (the owner's read count
// only drops to 0 between an Unlock and the next further hold), so none may
// be lost ("A Lease whose hold Redis no longer has ... is lost": these have
// theirs), and every Unlock of a live read returns nil. Judged only while W
// is held: a renewal of W late on a loaded machine loses W, and its reads
// with it, rightly (the short lease makes renewals frequent: every 100ms).
func TestFurtherReadChurnNotLost(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	const lease = 300 * time.Millisecond
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithLeaseTime(lease))
	var mu sync.Mutex
	lost, rounds := 0, 0
	var wg sync.WaitGroup
	for k := range 6 {
		wg.Go(func() {
			m := c.RWMutex("cadv:churn:" + string(rune('a'+k)))
			w, err := m.Lock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				rl, err := w.RLock(ctx)
				if err != nil {
					if !wLost(w) {
						t.Errorf("further read: %v (W: %v)", err, w.Err())
					}
					return
				}
				err = rl.Unlock(ctx)
				if err != nil && wLost(w) {
					return
				}
				mu.Lock()
				rounds++
				if err != nil {
					lost++
					if lost <= 3 {
						t.Errorf("Unlock of a read whose hold Redis had: %v (W: %v)", err, w.Err())
					}
				}
				mu.Unlock()
			}
			if err := w.Unlock(ctx); err != nil && !wLost(w) {
				t.Errorf("W: %v", err)
			}
		})
	}
	wg.Wait()
	if lost > 0 {
		t.Errorf("%d of %d further reads lost while their hold was in Redis", lost, rounds)
	}
	if rounds < 100 {
		t.Errorf("only %d further reads judged", rounds)
	}
}

// wLost reports whether w was lost, or its Deadline passed (a renewal
// that came too late: its timer may not have fired yet).
func wLost(w *fairrw.Lease) bool {
	return w.Err() != nil || !time.Now().Before(w.Deadline())
}

// TestShutdownFrozenCallsUnderWay: Redis frozen (SIGSTOP) with a
// write held, a further hold, an acquire and an Unlock under way, all with
// long ctxs. Shutdown(300ms) returns by its deadline; when it returns the
// Client is closed (later calls fail with ErrClosed), no lease outlives it
// (also one a call under way returns late), and Close afterwards returns.
func TestShutdownFrozenCallsUnderWay(t *testing.T) {
	r := redistest.StartProcess(t)
	ctl := lateness.Start(t)
	ctx := itest.TestCtx(t)
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithLeaseTime(3*time.Second), fairrw.WithUnlockTimeout(3*time.Second))
	m := c.RWMutex("cadv:frozen")
	w, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.RWMutex("cadv:frozen2").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Pause(t)
	defer r.Resume(t)
	type res struct {
		what string
		l    *fairrw.Lease
		err  error
	}
	out := make(chan res, 8)
	var wg sync.WaitGroup
	wg.Go(func() { l, err := w.RLock(ctx); out <- res{"further read", l, err} })
	wg.Go(func() { l, err := m.Lock(ctx); out <- res{"waiting lock", l, err} })
	wg.Go(func() { l, err := c.RWMutex("cadv:frozen3").Lock(ctx); out <- res{"fresh lock", l, err} })
	wg.Go(func() { err := r2.Unlock(ctx); out <- res{"unlock", nil, err} })
	time.Sleep(100 * time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	dl, _ := sctx.Deadline()
	err = c.Shutdown(sctx)
	ctl.Within(fmt.Sprintf("Shutdown after its deadline (%v)", err), time.Since(dl), 150*time.Millisecond)
	t.Logf("Shutdown: %v", err)
	if _, err := m.TryLock(ctx); !errors.Is(err, fairrw.ErrClosed) {
		t.Errorf("TryLock after Shutdown returned: %v, want ErrClosed", err)
	}
	select {
	case <-w.Done():
	default:
		t.Errorf("W alive after Shutdown returned")
	}
	if !errors.Is(w.Err(), fairrw.ErrLeaseLost) || !errors.Is(w.Err(), fairrw.ErrClosed) {
		t.Errorf("W Err %v", w.Err())
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("calls under way did not return within 10s of Shutdown")
	}
	close(out)
	for x := range out {
		t.Logf("%s: %v", x.what, x.err)
		if x.l != nil {
			select {
			case <-x.l.Done():
			default:
				t.Errorf("%s returned a live Lease after Shutdown returned (Err %v)", x.what, x.l.Err())
			}
		}
	}
	cdone := make(chan struct{})
	go func() { _ = c.Close(); close(cdone) }()
	select {
	case <-cdone:
	case <-time.After(10 * time.Second):
		t.Errorf("Close after an early Shutdown did not return within 10s (Redis frozen)")
	}
}

// TestCloseAfterEarlyShutdownNoLeak: Shutdown returns early on a
// frozen Redis; Close after it returns, and once it has, no goroutine of
// the Client is left (after Redis is resumed).
func TestCloseAfterEarlyShutdownNoLeak(t *testing.T) {
	r := redistest.StartProcess(t)
	ctl := lateness.Start(t)
	ctx := itest.TestCtx(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
	opt := r.ClientOption()
	c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithLeaseTime(time.Second), fairrw.WithUnlockTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	m := c.RWMutex("cadv:leak")
	var leases []*fairrw.Lease
	for range 3 {
		l, err := m.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	r.Pause(t)
	uctx, ucancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_ = leases[0].Unlock(uctx) // goes on in the background
	ucancel()
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	dl, _ := sctx.Deadline()
	_ = c.Shutdown(sctx)
	cancel()
	ctl.Within("Shutdown after its deadline", time.Since(dl), 150*time.Millisecond)
	for i, l := range leases {
		select {
		case <-l.Done():
		default:
			t.Errorf("lease %d alive after Shutdown", i)
		}
	}
	if err := leases[1].Unlock(ctx); !errors.Is(err, fairrw.ErrClosed) {
		t.Errorf("Unlock after Shutdown: %v, want ErrClosed", err)
	}
	start := time.Now()
	cdone := make(chan struct{})
	go func() { _ = c.Close(); close(cdone) }()
	select {
	case <-cdone:
	case <-time.After(5 * time.Second):
		t.Errorf("Close after an early Shutdown: not returned in 5s with Redis frozen")
		r.Resume(t)
		<-cdone
	}
	t.Logf("Close took %v", time.Since(start))
	r.Resume(t)
	time.Sleep(100 * time.Millisecond)
}

// TestFailedReleaseAndFurther: W (write) and F (a read downgraded
// from it). The network stalls; W.Unlock returns at its ctx and its
// release goes on in the background; meanwhile F takes a further read G
// (after healing) and F is unlocked. While G is alive by its Deadline,
// another Client never gets the write; once G is unlocked (nil), the other
// Client gets the write at once (no hold is left that nobody releases).
func TestFailedReleaseAndFurther(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	p := faults.StartProxy(t, r.Addr)
	base := r.ClientOption()
	base.InitAddress = []string{p.Addr()}
	c := itest.NewClientOn(t, base, itest.Transports[0], fairrw.WithLeaseTime(2*time.Second), fairrw.WithUnlockTimeout(300*time.Millisecond))
	other := itest.NewClient(t, r, itest.Transports[0])
	stuck, overlap := 0, 0
	for i := range 8 {
		name := "cadv:relfail"
		m, om := c.RWMutex(name), other.RWMutex(name)
		w, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f, err := w.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Stall()
		uctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		_ = w.Unlock(uctx)
		cancel()
		var g *fairrw.Lease
		var gerr error
		var wg sync.WaitGroup
		wg.Go(func() { g, gerr = f.RLock(ctx) })
		time.Sleep(time.Duration(i%4) * 40 * time.Millisecond)
		p.Heal()
		wg.Wait()
		if gerr != nil {
			t.Fatalf("round %d: further read: %v", i, gerr)
		}
		if err := f.Unlock(ctx); err != nil {
			t.Fatalf("round %d: F: %v", i, err)
		}
		// G alive: the other Client's write must be refused.
		for range 5 {
			x, err := om.TryLock(ctx)
			if err == nil {
				if itest.AdvHeld(g, time.Now()) {
					overlap++
					t.Errorf("round %d: other Client got the write while G is alive until %v", i, time.Until(g.Deadline()))
				}
				_ = x.Unlock(ctx)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := g.Unlock(ctx); err != nil {
			t.Fatalf("round %d: G: %v", i, err)
		}
		time.Sleep(300 * time.Millisecond) // the background release retries within 250ms
		x, err := om.TryLock(ctx)
		if err != nil {
			stuck++
			info, _ := other.Inspect(ctx, name)
			t.Errorf("round %d: every Lease unlocked, yet TryLock: %v; Redis keeps %+v", i, err, info.Holders)
			_ = om.ForceUnlock(ctx, fairrw.Write)
			_ = om.ForceUnlock(ctx, fairrw.Read)
			continue
		}
		_ = x.Unlock(ctx)
	}
	t.Logf("stuck %d overlap %d", stuck, overlap)
}

// TestShutdownStormReleasesAll: a Client with cohorts whose
// goroutines lock, take further holds and unlock the same lock in a loop is
// shut down mid-storm. When Shutdown returns nil every hold was released
// (or found gone): another Client's TryLock succeeds at once; every Lease
// any call returned is ended; later calls fail with ErrClosed.
func TestShutdownStormReleasesAll(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	other := itest.NewClient(t, r, itest.Transports[0])
	for round := range 6 {
		c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithCohorts(true))
		name := "cadv:storm"
		m := c.RWMutex(name)
		var mu sync.Mutex
		var got []*fairrw.Lease
		keep := func(l *fairrw.Lease) { mu.Lock(); got = append(got, l); mu.Unlock() }
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				for {
					var l *fairrw.Lease
					var err error
					if g%2 == 0 {
						l, err = m.Lock(ctx)
					} else {
						l, err = m.RLock(ctx)
					}
					if err != nil {
						return
					}
					keep(l)
					if f, err := l.RLock(ctx); err == nil {
						keep(f)
						if g%3 == 0 {
							_ = f.Unlock(ctx)
						}
					}
					_ = l.Unlock(ctx)
				}
			})
		}
		time.Sleep(time.Duration(50+round*30) * time.Millisecond)
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := c.Shutdown(sctx)
		cancel()
		if err != nil {
			t.Errorf("round %d: Shutdown: %v", round, err)
		}
		x, terr := other.RWMutex(name).TryLock(ctx)
		if err == nil && terr != nil {
			info, _ := other.Inspect(ctx, name)
			t.Errorf("round %d: Shutdown returned nil, yet another Client's TryLock: %v; Redis keeps %+v", round, terr, info.Holders)
		}
		wg.Wait()
		mu.Lock()
		for i, l := range got {
			select {
			case <-l.Done():
			default:
				t.Errorf("round %d: lease %d alive after Shutdown", round, i)
			}
		}
		mu.Unlock()
		if terr == nil {
			_ = x.Unlock(ctx)
		} else {
			_ = other.RWMutex(name).ForceUnlock(ctx, fairrw.Write)
			_ = other.RWMutex(name).ForceUnlock(ctx, fairrw.Read)
		}
		if _, err := m.TryRLock(ctx); !errors.Is(err, fairrw.ErrClosed) {
			t.Errorf("round %d: after Shutdown: %v", round, err)
		}
	}
}
