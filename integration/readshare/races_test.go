package readshare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/faults"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// rsaReader keeps reads of m held back to back: a ring of up to depth
// Leases, a new RLock before the oldest is unlocked, so that the Client
// always holds the name (its reads share one hold). Every grant is passed
// to onGrant with its time. It stops when stop closes, unlocking all.
func rsaReader(ctx context.Context, m *fairrw.RWMutex, depth int, stop <-chan struct{}, onGrant func(*fairrw.Lease, time.Time)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ring []*fairrw.Lease
		defer func() {
			for _, l := range ring {
				_ = l.Unlock(ctx)
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			l, err := m.RLock(rctx)
			cancel()
			if err == nil {
				onGrant(l, time.Now())
				ring = append(ring, l)
			}
			if len(ring) > depth || (err != nil && len(ring) > 0) {
				_ = ring[0].Unlock(ctx)
				ring = ring[1:]
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	return done
}

// TestReadShareLostHoldStaysShared: docs/policies.md, Shared reads: "a
// hold lost in Redis ends every Lease on it at the next renewal ... a read
// may share a hold Redis lost (ForceUnlock) until that renewal". A Client
// whose reads overlap back to back (always one held) has its read hold
// force-unlocked; another Client's writer is then granted at once. From
// one renewal interval (plus a margin) after the ForceUnlock on, no read
// of the first Client may be granted while that write is held (exclusion).
//
// A read sharing the hold while that round is in flight broke it, which
// TestReadShareJoinDuringRenewal arranges deterministically.
func TestReadShareLostHoldStaysShared(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			const lease = 900 * time.Millisecond
			ctx := itest.TestCtx(t)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "rsa:lost:" + p.String()
			m := c.RWMutex(name)

			var (
				mu          sync.Mutex
				wHeld       bool
				wFrom       time.Time
				forcedAt    time.Time
				bad         []string
				afterGood   atomic.Int64
				lastDuringW time.Duration
				duringW     int
			)
			stop := make(chan struct{})
			done := rsaReader(ctx, m, 3, stop, func(l *fairrw.Lease, at time.Time) {
				mu.Lock()
				defer mu.Unlock()
				if wHeld && !forcedAt.IsZero() && at.Sub(forcedAt) > lease/3+300*time.Millisecond {
					bad = append(bad, fmt.Sprintf("read (owner %s, token %d, woken %q) granted %v after the ForceUnlock, %v into another Client's write",
						l.Owner(), l.Token(), hidden.WokenBy(l), at.Sub(forcedAt).Round(time.Millisecond), at.Sub(wFrom).Round(time.Millisecond)))
				}
				if !forcedAt.IsZero() {
					afterGood.Add(1)
					if wHeld {
						lastDuringW = at.Sub(forcedAt)
						duringW++
					}
				}
			})
			time.Sleep(300 * time.Millisecond) // two renewal rounds of sharing
			mu.Lock()
			forcedAt = time.Now()
			mu.Unlock()
			if err := other.RWMutex(name).ForceUnlock(ctx, fairrw.Read); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			w, err := other.RWMutex(name).Lock(wctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			wHeld, wFrom = true, time.Now()
			mu.Unlock()
			time.Sleep(2 * time.Second) // six renewal rounds of the reader's Client
			mu.Lock()
			wHeld = false
			mu.Unlock()
			if err := w.Unlock(ctx); err != nil {
				t.Logf("writer unlock: %v", err)
			}
			close(stop)
			<-done
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d reads granted after the ForceUnlock, %d while the write was held, the last %v after the ForceUnlock", afterGood.Load(), duringW, lastDuringW)
			for i, b := range bad {
				if i == 5 {
					t.Errorf("... %d such reads in all", len(bad))
					break
				}
				t.Error(b)
			}
		})
	}
}

// rsaNextConfirm waits until l's Deadline moves (a renewal round
// confirmed it) and returns when that happened.
func rsaNextConfirm(t *testing.T, l *fairrw.Lease, within time.Duration) time.Time {
	t.Helper()
	d0 := l.Deadline()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		if l.Deadline() != d0 {
			return time.Now()
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no renewal confirmed within %v", within)
	return time.Time{}
}

// TestReadShareJoinDuringRenewal: the same, made deterministic. A
// Client (through a proxy) holds a read; right after one of its renewal
// rounds, another Client force-unlocks the read and takes the write. The
// next round is held in the network (the proxy stalls it for 300ms); while
// it is in flight a read of the first Client shares the hold (no Redis
// call). The round then finds the hold gone and ends the Lease it carried.
//
// Promise (docs/policies.md, Shared reads): "a hold lost in Redis ends
// every Lease on it at the next renewal"; a read may share a lost hold only
// "until that renewal". The round once ended only the Leases it carried:
// the one that joined during it lived on, and a read made after it still
// shared the dead hold, alive while another Client held the write. Now
// the round ends every Lease of the owner's hold, and no read shares it
// any more.
func TestReadShareJoinDuringRenewal(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			px := faults.StartProxy(t, r.Addr)
			const lease = 3 * time.Second
			interval := lease / 3
			ctx := itest.TestCtx(t)
			opt := r.ClientOption()
			opt.InitAddress = []string{px.Addr()}
			c := itest.NewClientOn(t, opt, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "rsa:renewal:" + p.String()
			m := c.RWMutex(name)
			l1, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			confirmed := rsaNextConfirm(t, l1, 2*interval)
			if err := other.RWMutex(name).ForceUnlock(ctx, fairrw.Read); err != nil {
				t.Fatal(err)
			}
			w, err := other.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Unlock(ctx) }()
			// The next round starts about one interval after the last.
			time.Sleep(time.Until(confirmed.Add(interval - 150*time.Millisecond)))
			px.Stall()
			time.Sleep(250 * time.Millisecond) // the round is sent, and held
			l2ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			l2, err := m.RLock(l2ctx) // shares l1's hold: no Redis call
			cancel()
			if err != nil {
				px.Heal()
				t.Fatalf("a read during the stalled round did not share: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			px.Heal()
			select {
			case <-l1.Done():
			case <-time.After(2 * interval):
				t.Fatal("the force-unlocked read was not lost at the next renewal")
			}
			if !errors.Is(l1.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("l1: %v, want ErrLeaseLost", l1.Err())
			}
			lostAt := time.Now()
			// That renewal is over: the hold is known lost.
			time.Sleep(20 * time.Millisecond)
			if itest.AdvHeld(l2, time.Now()) && itest.AdvHeld(w, time.Now()) {
				t.Errorf("the read that shared the lost hold during the renewal is still held (Deadline in %v) after that renewal ended its hold's other Lease, while another Client holds the write (token %d)",
					time.Until(l2.Deadline()).Round(time.Millisecond), w.Token())
			}
			l3ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			l3, err := m.RLock(l3ctx)
			cancel()
			if err == nil {
				if itest.AdvHeld(w, time.Now()) {
					t.Errorf("a read made %v after the renewal that found the hold gone shares it (owner %s, woken %q, Deadline in %v) while another Client holds the write",
						time.Since(lostAt).Round(time.Millisecond), l3.Owner(), hidden.WokenBy(l3), time.Until(l3.Deadline()).Round(time.Millisecond))
				}
				info, ierr := other.Inspect(ctx, name)
				if ierr == nil {
					t.Logf("Redis: holders %+v", info.Holders)
				}
				_ = l3.Unlock(ctx)
			}
			_ = l2.Unlock(ctx)
		})
	}
}

// TestReadShareLeaseSemantics: every Lease on a shared hold is its own
// (docs/policies.md, Shared reads; Lease docs): one owner for all, the
// token of the last write, Deadlines that Redis keeps, its own Done, Err
// and Context; a second Unlock is ErrNotHeld; an Unlock with a cancelled
// ctx while another Lease holds ends only its own; a further hold
// (Lease.RLock) from a shared Lease keeps others out after every shared
// Lease is unlocked; the last Unlock frees the name at once.
func TestReadShareLeaseSemantics(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "rsa:sem:" + p.String()
			wtoken := writeOnce(t, ctx, other.RWMutex(name))
			m := c.RWMutex(name)
			r1, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := m.TryRLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r1.Owner() != r2.Owner() {
				t.Fatalf("owners %s and %s: the second read did not share", r1.Owner(), r2.Owner())
			}
			f, err := r2.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range []*fairrw.Lease{r1, r2, f} {
				if l.Token() != wtoken {
					t.Errorf("lease %d token %d, want the last write's %d", i, l.Token(), wtoken)
				}
				if rd := itest.RsaRedisDeadline(t, ctx, other, name, l.Owner()); l.Deadline().After(rd.Add(2 * time.Millisecond)) {
					t.Errorf("lease %d Deadline %v after what Redis keeps (%v)", i, l.Deadline(), rd)
				}
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := r1.Unlock(cancelled); err != nil {
				t.Errorf("unlock of a shared Lease with a cancelled ctx while others hold: %v", err)
			}
			if err := r1.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
				t.Errorf("second Unlock: %v, want ErrNotHeld", err)
			}
			for i, l := range []*fairrw.Lease{r2, f} {
				select {
				case <-l.Done():
					t.Errorf("lease %d ended by another's Unlock: %v", i+2, l.Err())
				default:
				}
				if l.Context().Err() != nil {
					t.Errorf("lease %d Context ended by another's Unlock", i+2)
				}
			}
			if r1.Context().Err() == nil || r1.Err() != nil {
				t.Errorf("unlocked lease: Context %v Err %v", r1.Context().Err(), r1.Err())
			}
			if err := r2.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			// Only the further hold is left: it keeps another Client's
			// writer out.
			if l, err := other.RWMutex(name).TryLock(ctx); err == nil {
				_ = l.Unlock(ctx)
				t.Fatal("a writer of another Client granted while a further read hold of a shared Lease is held")
			}
			if rd := itest.RsaRedisDeadline(t, ctx, other, name, f.Owner()); rd.IsZero() || f.Deadline().After(rd.Add(2*time.Millisecond)) {
				t.Errorf("further hold Deadline %v, Redis keeps %v", f.Deadline(), rd)
			}
			// A read now shares the further hold's owner or not: either way,
			// the name is free once both are unlocked.
			r3, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := r3.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			l, err := other.RWMutex(name).TryLock(ctx)
			if err != nil {
				t.Fatalf("the name is not free after every Lease was unlocked: %v", err)
			}
			if l.Token() <= wtoken {
				t.Errorf("next write token %d not above %d", l.Token(), wtoken)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			itest.NoKeysLeft(t, r, name)
		})
	}
}

// TestReadShareJoinRacesLastUnlock: a read arrives while the only Lease
// on the shared hold is being unlocked (with a live, a cancelled or a
// short ctx); in every case, once both are unlocked, the name is free in
// Redis (another Client's TryLock is granted at once) and no key is left
// but the fence. Each new Lease is alive (Done open) when returned.
func TestReadShareJoinRacesLastUnlock(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(time.Second))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "rsa:race:" + p.String()
			m := c.RWMutex(name)
			om := other.RWMutex(name)
			for i := range 150 {
				l1, err := m.RLock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var l2 *fairrw.Lease
				var err2 error
				var wg sync.WaitGroup
				wg.Go(func() {
					uctx, cancel := context.WithCancel(ctx)
					switch i % 3 {
					case 0:
						cancel()
					case 1:
						uctx, cancel = context.WithTimeout(ctx, time.Duration(i%7)*50*time.Microsecond)
					}
					_ = l1.Unlock(uctx)
					cancel()
				})
				wg.Go(func() {
					itest.RuntimeYield(i % 4)
					l2, err2 = m.RLock(ctx)
				})
				wg.Wait()
				if err2 != nil {
					t.Fatal(err2)
				}
				select {
				case <-l2.Done():
					t.Fatalf("round %d: a Lease returned ended: %v", i, l2.Err())
				default:
				}
				if l, err := om.TryLock(ctx); err == nil {
					_ = l.Unlock(ctx)
					t.Fatalf("round %d: another Client's write granted while a read Lease (owner %s, same as the first: %v) is held", i, l2.Owner(), l2.Owner() == l1.Owner())
				}
				if err := l2.Unlock(ctx); err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
				deadline := time.Now().Add(time.Second)
				for {
					l, err := om.TryLock(ctx)
					if err == nil {
						if err := l.Unlock(ctx); err != nil {
							t.Fatal(err)
						}
						break
					}
					if time.Now().After(deadline) {
						info, _ := other.Inspect(ctx, name)
						t.Fatalf("round %d: the name is still held a second after every Lease was unlocked: %+v", i, info)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
		})
	}
}

// TestReadSharePausedRedis: Redis is frozen (SIGSTOP) longer than the
// lease while one Client's reads share a hold, its connection just cut
// (so the queue must be read again). Every RLock, TryRLock and Unlock
// returns by its ctx's deadline (Unlock: plus the documented 20ms grace);
// no Lease is returned with less than nothing left; every Lease's Done
// closes by its Deadline; no Deadline is later than the hold's first
// Deadline before the freeze (nothing renewed it); once Redis is back,
// another Client's writer is granted and nothing is left.
func TestReadSharePausedRedis(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.StartProcess(t)
			ctl := lateness.Start(t)
			const lease = 600 * time.Millisecond
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease), fairrw.WithUnlockTimeout(200*time.Millisecond))
			name := "rsa:pause:" + p.String()
			ctx := itest.TestCtx(t)
			m := c.RWMutex(name)
			r1, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu     sync.Mutex
				leases = []*fairrw.Lease{r1}
				wg     sync.WaitGroup
				late   []string
			)
			// Judged against the control, as every bound on a return: a
			// loaded machine (two copies of the suite side by side) ran
			// these calls' returns 130-150 ms after their deadlines.
			overdue := func(what string, dl time.Time, grace time.Duration) {
				ctl.Within(what+" after its deadline", time.Since(dl), grace)
			}
			stop := make(chan struct{})
			for g := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						rctx, cancel := context.WithTimeout(ctx, time.Duration(100+50*g)*time.Millisecond)
						dl, _ := rctx.Deadline()
						var l *fairrw.Lease
						var err error
						if i%2 == 0 {
							l, err = m.RLock(rctx)
						} else {
							l, err = m.TryRLock(rctx)
						}
						cancel()
						overdue(fmt.Sprintf("g%d RLock", g), dl, 100*time.Millisecond)
						if err != nil {
							time.Sleep(5 * time.Millisecond)
							continue
						}
						if !time.Now().Before(l.Deadline()) {
							mu.Lock()
							late = append(late, fmt.Sprintf("g%d: a Lease returned past its Deadline", g))
							mu.Unlock()
						}
						mu.Lock()
						leases = append(leases, l)
						mu.Unlock()
						time.Sleep(10 * time.Millisecond)
						uctx, ucancel := context.WithTimeout(ctx, 150*time.Millisecond)
						dl, _ = uctx.Deadline()
						_ = l.Unlock(uctx)
						ucancel()
						overdue(fmt.Sprintf("g%d Unlock", g), dl, 20*time.Millisecond+100*time.Millisecond)
					}
				})
			}
			time.Sleep(100 * time.Millisecond)
			first := r1.Deadline()
			raw := r.Client(t, nil)
			if err := raw.Do(ctx, raw.B().ClientKill().TypeNormal().Build()).Error(); err != nil {
				t.Fatal(err)
			}
			r.Pause(t)
			paused := true
			defer func() {
				if paused {
					r.Resume(t)
				}
			}()
			time.Sleep(2 * lease)
			close(stop)
			wg.Wait()
			mu.Lock()
			for i, l := range leases {
				if l.Deadline().After(first.Add(lease)) {
					t.Errorf("lease %d: Deadline %v past the last renewal's reach", i, l.Deadline())
				}
				select {
				case <-l.Done():
					continue
				default:
				}
				select {
				case <-l.Done():
					ctl.Within(fmt.Sprintf("lease %d: Done past its Deadline", i), time.Since(l.Deadline()), 100*time.Millisecond)
				case <-time.After(time.Until(l.Deadline()) + 10*time.Second):
					t.Errorf("lease %d: Done still open 10s past its Deadline", i)
				}
			}
			for _, s := range late {
				t.Error(s)
			}
			mu.Unlock()
			r.Resume(t)
			paused = false
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
			l, err := other.RWMutex(name).Lock(lctx)
			lcancel()
			if err != nil {
				info, _ := other.Inspect(ctx, name)
				t.Fatalf("another Client's Lock after Redis came back: %v (%+v)", err, info)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
			t.Logf("%d leases", len(leases))
		})
	}
}

// TestReadShareShutdownFrozenAfterCut: "Shutdown returns by ctx's
// deadline ... whatever Redis does". A Client holds shared reads; its
// connection is cut and Redis frozen (SIGSTOP) at once; reads and unlocks
// go on for a moment (each returns by its deadline), then Shutdown is
// given 300ms. It returned seconds late once: closing waited for the
// Client's background Redis calls, stuck in rueidis's reconnection
// handshake to the frozen server (bounded only by the dial timeout); now
// they end in the background, after every lease has ended. With sharing
// and without.
func TestReadShareShutdownFrozenAfterCut(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) { rsaShutdownFrozenAfterCut(t, shared) })
	}
}

func rsaShutdownFrozenAfterCut(t *testing.T, shared bool) {
	r := redistest.StartProcess(t)
	ctl := lateness.Start(t)
	const lease = 600 * time.Millisecond
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithLeaseTime(lease), fairrw.WithUnlockTimeout(200*time.Millisecond), fairrw.WithCohorts(shared))
	name := "rsa:shutdown-frozen"
	ctx := itest.TestCtx(t)
	m := c.RWMutex(name)
	var leases []*fairrw.Lease
	for range 3 {
		l, err := m.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	raw := r.Client(t, nil)
	if err := raw.Do(ctx, raw.B().ClientKill().TypeNormal().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.Pause(t)
	defer r.Resume(t)
	// Reads go on for two leases (each must read the queue again, after the
	// cut): all return by their deadline, and none is granted.
	for end := time.Now().Add(2 * lease); time.Now().Before(end); {
		rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		dl, _ := rctx.Deadline()
		l, err := m.RLock(rctx)
		cancel()
		ctl.Within("RLock after its deadline", time.Since(dl), 100*time.Millisecond)
		if err == nil {
			leases = append(leases, l)
		}
	}
	for _, l := range leases {
		uctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		dl, _ := uctx.Deadline()
		_ = l.Unlock(uctx)
		cancel()
		ctl.Within("Unlock after its deadline", time.Since(dl), 100*time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	dl, _ := sctx.Deadline()
	err := c.Shutdown(sctx)
	ctl.Within(fmt.Sprintf("Shutdown after its deadline (%v)", err), time.Since(dl), 100*time.Millisecond)
}

// TestReadShareStorm: two Clients, each with sharing readers (RLock,
// TryRLock, further holds from shared Leases) and writers, under random
// acquire and unlock cancellations. No write Lease is alive while a read
// or write Lease of another owner is (by Done and Deadline); every call
// returns by its deadline; afterwards each Client's writer is granted
// promptly and nothing of the lock is left.
func TestReadShareStorm(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctl := lateness.Start(t)
			name := "rsa:storm:" + p.String()
			clients := []*fairrw.Client{
				itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(time.Second)),
				itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(time.Second)),
			}
			o := itest.NewAdvOracle()
			var granted, reads atomic.Int64
			stop := time.Now().Add(2 * time.Second)
			var wg sync.WaitGroup
			for ci, c := range clients {
				m := c.RWMutex(name)
				for g := range 5 {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(ci)+7, uint64(g)))
						writer := g == 0
						who := fmt.Sprintf("c%d/g%d", ci, g)
						for time.Now().Before(stop) {
							timeout := time.Duration(500+rng.IntN(4000)) * time.Microsecond
							ctx, cancel := context.WithTimeout(context.Background(), timeout)
							if rng.IntN(4) == 0 {
								spin := rng.IntN(3)
								go func() { itest.RuntimeYield(spin); cancel() }()
							}
							dl, _ := ctx.Deadline()
							var l *fairrw.Lease
							var err error
							mode := fairrw.Read
							switch {
							case writer:
								mode = fairrw.Write
								l, err = m.Lock(ctx)
							case rng.IntN(3) == 0:
								l, err = m.TryRLock(ctx)
							default:
								l, err = m.RLock(ctx)
							}
							ctl.Within(who+": acquire after its deadline", time.Since(dl), time.Second)
							cancel()
							if err != nil {
								continue
							}
							granted.Add(1)
							if mode == fairrw.Read {
								reads.Add(1)
							}
							o.Grant(l, mode, who+"/"+map[fairrw.Mode]string{fairrw.Read: "read", fairrw.Write: "write"}[mode])
							held := []*fairrw.Lease{l}
							if mode == fairrw.Read && rng.IntN(4) == 0 {
								if f, err := l.RLock(context.Background()); err == nil {
									held = append(held, f)
								}
							}
							time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
							o.Release(l)
							rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
							for _, h := range held {
								uctx, ucancel := context.WithTimeout(context.Background(), 5*time.Second)
								if rng.IntN(5) == 0 {
									ucancel()
								}
								_ = h.Unlock(uctx)
								ucancel()
							}
						}
					})
				}
			}
			wg.Wait()
			o.Check(t)
			t.Logf("granted %d (%d reads)", granted.Load(), reads.Load())
			o.FinalWrites(t, name, clients)
			itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
		})
	}
}

// TestReadShareFurtherAndSharedUnlockRace: a shared read Lease l and a
// further hold f taken from it (Lease.RLock) are unlocked at the same
// time. f's Unlock releases in Redis writing what the owner keeps (l's
// read); l's Unlock, if it looks at the owner between f's release in
// Redis and f's end, counts f as still holding and ends with no Redis
// call. Promise: once every Lease is unlocked nothing of the lock stays
// held (another Client's TryLock is granted at once). It failed 3 runs in
// 4 under -race before a Lease whose release was sent stopped counting
// among its owner's holds (owner.alive).
func TestReadShareFurtherAndSharedUnlockRace(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	c := itest.NewClient(t, r, itest.Transports[0])
	other := itest.NewClient(t, r, itest.Transports[0])
	name := "rsa:further-race"
	m := c.RWMutex(name)
	om := other.RWMutex(name)
	stuck := 0
	const rounds = 1500
	for i := range rounds {
		l, err := m.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var errL, errF error
		wg.Go(func() { errF = f.Unlock(context.Background()) })
		wg.Go(func() {
			// Start while f's release is in flight, so as to wait for the
			// owner's lock and take it the moment f's release leaves it.
			spin := time.Now().Add(time.Duration(i%8) * 15 * time.Microsecond)
			for time.Now().Before(spin) {
			}
			errL = l.Unlock(context.Background())
		})
		wg.Wait()
		if errL != nil || errF != nil {
			t.Fatalf("round %d: unlocks: %v, %v", i, errL, errF)
		}
		w, err := om.TryLock(ctx)
		if err != nil {
			stuck++
			info, _ := other.Inspect(ctx, name)
			if stuck == 1 {
				t.Errorf("round %d: every Lease unlocked (both Unlocks returned nil), yet another Client's TryLock is refused: %v; Redis keeps %+v", i, err, info.Holders)
			}
			// Free it for the next round.
			if err := om.ForceUnlock(ctx, fairrw.Read); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if stuck > 0 {
		t.Errorf("%d of %d rounds left the read held in Redis with no Lease", stuck, rounds)
	}
}

// TestReadShareShutdown: Shutdown of a Client whose reads share a hold
// (with a further hold, and a read waiting behind another Client's queued
// writer) ends every Lease (ErrLeaseLost and ErrClosed), fails the
// waiting read with ErrClosed, releases the hold: the queued writer is
// granted at once, and nothing is left.
func TestReadShareShutdown(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "rsa:shutdown:" + p.String()
			m := c.RWMutex(name)
			var leases []*fairrw.Lease
			for range 3 {
				l, err := m.RLock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				leases = append(leases, l)
			}
			f, err := leases[1].RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, f)
			w := itest.AdvLock(ctx, other.RWMutex(name))
			itest.AwaitWaitingWriters(t, ctx, c, name, 1)
			waiting := itest.RLockThenUnlock(ctx, m)
			time.Sleep(50 * time.Millisecond)
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			start := time.Now()
			if err := c.Shutdown(sctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if err := <-waiting; !errors.Is(err, fairrw.ErrClosed) {
				t.Errorf("read waiting behind the writer: %v, want ErrClosed", err)
			}
			for i, l := range leases {
				if !errors.Is(l.Err(), fairrw.ErrLeaseLost) || !errors.Is(l.Err(), fairrw.ErrClosed) {
					t.Errorf("lease %d: Err %v", i, l.Err())
				}
			}
			res := itest.AdvRecv(t, w, 2*time.Second, "the queued writer after Shutdown")
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			t.Logf("writer granted %v after Shutdown began", res.At.Sub(start))
			if err := res.L.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
		})
	}
}
