package deadline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// checkEnded checks that a lease that ended shows it consistently: Done
// closed, Context cancelled with the lease's Err as its cause (or, after a
// successful Unlock, a cause that is neither a loss nor a close).
func checkEnded(t *testing.T, what string, l *fairrw.Lease, wantLost bool) {
	t.Helper()
	select {
	case <-l.Done():
	default:
		t.Errorf("%s: Done not closed once the lease ended", what)
		return
	}
	ctx := l.Context()
	if ctx != l.Context() {
		t.Errorf("%s: Context is not one value per lease", what)
	}
	if ctx.Err() == nil {
		t.Errorf("%s: Context not cancelled once the lease ended", what)
	}
	err, cause := l.Err(), context.Cause(ctx)
	switch {
	case wantLost && !errors.Is(err, fairrw.ErrLeaseLost):
		t.Errorf("%s: Err = %v, want ErrLeaseLost", what, err)
	case wantLost && cause != err:
		t.Errorf("%s: Context's cause %v is not the lease's Err %v", what, cause, err)
	case !wantLost && err != nil:
		t.Errorf("%s: Err = %v after a successful Unlock", what, err)
	case !wantLost && (errors.Is(cause, fairrw.ErrLeaseLost) || errors.Is(cause, fairrw.ErrClosed)):
		t.Errorf("%s: cause %v after a successful Unlock", what, cause)
	}
	g, cancel := l.Guard(context.Background())
	defer cancel()
	if g.Err() == nil || context.Cause(g) != cause {
		t.Errorf("%s: Guard of an ended lease not cancelled at once with its cause: %v / %v", what, g.Err(), context.Cause(g))
	}
}

// TestClientCostFrozenCallsAndUnlocks: with Redis frozen, hundreds of
// concurrent acquires, in two waves, each return by their ctx's deadline
// (a goroutine stuck in a frozen call is never handed the next); Unlocks
// with a ctx shorter, longer, without deadline and cancelled mid-call
// return by min(ctx, unlock timeout), end their lease at once, and the
// releases go on in the background: once Redis is back, the locks are
// free long before the leases could have run out. Close leaves no
// goroutine behind.
func TestClientCostFrozenCallsAndUnlocks(t *testing.T) {
	r := redistest.StartProcess(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
	const unlockTimeout = 400 * time.Millisecond
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithUnlockTimeout(unlockTimeout), fairrw.WithLeaseTime(30*time.Second))
	other := itest.NewClient(t, r, itest.Transports[0])
	raw := r.Client(t, nil)
	if err := raw.Do(itest.CtxFor(t, 5*time.Second), raw.B().Ping().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Warm up some workers.
	for i := 0; i < 20; i++ {
		l, err := c.RWMutex(fmt.Sprint("cc-warm-", i)).Lock(itest.CtxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		itest.MustUnlock(t, l)
	}
	// Each bound is the library's allowance plus what the machine added
	// to a bare wait meanwhile (the control's worst); a try in which the
	// machine ran a bare wait later than that allowance is made again,
	// up to three (with two suites side by side, 3-4 of 400 acquires
	// returned 150-280 ms past the worst of their bare calls, which
	// were 0.66-0.84 s late themselves).
	lateness.Tries(t, 3, func(try int, ctl *lateness.Control) {
		frozenCallsAndUnlocks(t, r, ctl, c, other, raw, unlockTimeout, try)
	})
	raw.Close()
	_ = c.Close()
	_ = other.Close()
}

// frozenCallsAndUnlocks is a try of TestClientCostFrozenCallsAndUnlocks:
// holds for the Unlocks, then Redis frozen, the acquires and the Unlocks,
// and Redis back.
func frozenCallsAndUnlocks(t *testing.T, r *redistest.Redis, ctl *lateness.Control, c, other *fairrw.Client, raw rueidis.Client, unlockTimeout time.Duration, try int) {
	type unlockCase struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		bound  time.Duration
		lease  *fairrw.Lease
		lockNm string
	}
	cases := []*unlockCase{
		{name: "short", bound: 100 * time.Millisecond, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}},
		{name: "long", bound: unlockTimeout, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 5*time.Second)
		}},
		{name: "none", bound: unlockTimeout, ctx: func() (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		}},
		{name: "cancelled", bound: 60 * time.Millisecond, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(60*time.Millisecond, cancel)
			return ctx, cancel
		}},
	}
	for _, uc := range cases {
		uc.lockNm = fmt.Sprintf("cc-unlock-%s-%d", uc.name, try)
		l, err := c.RWMutex(uc.lockNm).Lock(itest.CtxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		uc.lease = l
	}

	r.Pause(t)
	paused := true
	defer func() {
		if paused {
			r.Resume(t)
		}
	}()
	const slack = 150 * time.Millisecond
	var wg sync.WaitGroup
	for wave := 0; wave < 2; wave++ {
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := time.Duration(50+i%5*50) * time.Millisecond
				// The control: a bare rueidis call on the frozen Redis, as
				// long, at the same moment, then, as the acquire's give-back
				// after its deadline (rwmutex.go, giveBack), a second one
				// bounded by the cleanup grace: two waits, each of which a
				// loaded machine runs late (the acquires were 480-580 ms
				// late in CI beside a one-wait control's 329 ms).
				ctl.Beside(d, func(ctx context.Context) {
					_ = raw.Do(ctx, raw.B().Ping().Build()).Error()
					gctx, cancel := context.WithTimeout(context.Background(), hidden.CleanupGrace)
					defer cancel()
					_ = raw.Do(gctx, raw.B().Ping().Build()).Error()
				})
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				start := time.Now()
				var err error
				if i%2 == 0 {
					_, err = c.RWMutex(fmt.Sprintf("cc-frozen-%d-%d", try, i)).TryLock(ctx)
				} else {
					_, err = c.RWMutex(fmt.Sprintf("cc-frozen-%d-%d", try, i)).RLock(ctx)
				}
				ctl.Within(fmt.Sprintf("wave %d: acquire %d (ctx %v, %v) after its ctx's deadline", wave, i, d, err), time.Since(start)-d, slack)
				if err == nil {
					t.Errorf("wave %d: acquire %d granted on a frozen Redis", wave, i)
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, uc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := uc.ctx()
			defer cancel()
			start := time.Now()
			err := uc.lease.Unlock(ctx)
			took := time.Since(start)
			if err == nil {
				t.Errorf("Unlock %s: nil on a frozen Redis", uc.name)
			}
			ctl.Within(fmt.Sprintf("Unlock %s (returned after %v, %v) past its bound %v", uc.name, took, err, uc.bound), took-uc.bound, slack)
			checkEnded(t, "Unlock "+uc.name, uc.lease, true)
		}()
	}
	wg.Wait()
	r.Resume(t)
	paused = false
	for _, uc := range cases {
		start := time.Now()
		l, err := other.RWMutex(uc.lockNm).Lock(itest.CtxFor(t, 5*time.Second))
		if err != nil {
			t.Errorf("Unlock %s: the release was lost: the lock not free after Redis came back: %v", uc.name, err)
			continue
		}
		ctl.Within("Unlock "+uc.name+": the lock free again (from the Lock's start)", time.Since(start), 3*time.Second)
		itest.MustUnlock(t, l)
	}
}

// TestClientCostLazyLeaseContext: Done and Context asked for concurrently by
// many goroutines, before, while and after the lease ends in each way
// (Unlock, ForceUnlock by another Client, expiry, Close, Shutdown): each
// sees one Context, closed once, with the lease's Err as its cause.
func TestClientCostLazyLeaseContext(t *testing.T) {
	r := redistest.Start(t)
	ends := []struct {
		name string
		lost bool
		end  func(t *testing.T, c, other *fairrw.Client, name string, l *fairrw.Lease)
	}{
		{"unlock", false, func(t *testing.T, c, other *fairrw.Client, name string, l *fairrw.Lease) { itest.MustUnlock(t, l) }},
		{"force-unlock", true, func(t *testing.T, c, other *fairrw.Client, name string, l *fairrw.Lease) {
			if err := other.RWMutex(name).ForceUnlock(itest.CtxFor(t, 5*time.Second), fairrw.Write); err != nil {
				t.Fatal(err)
			}
		}},
		{"expiry", true, nil},
		{"close", true, func(t *testing.T, c, other *fairrw.Client, name string, l *fairrw.Lease) { _ = c.Close() }},
		{"shutdown", true, func(t *testing.T, c, other *fairrw.Client, name string, l *fairrw.Lease) {
			_ = c.Shutdown(itest.CtxFor(t, 5*time.Second))
		}},
	}
	for _, e := range ends {
		for _, first := range []string{"before", "after"} {
			t.Run(e.name+"/"+first, func(t *testing.T) {
				c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithLeaseTime(600*time.Millisecond))
				other := itest.NewClient(t, r, itest.Transports[0])
				name := "cc-lazy-" + e.name + "-" + first
				var opts []fairrw.AcquireOption
				if e.end == nil {
					opts = append(opts, fairrw.WithLease(150*time.Millisecond+333*time.Microsecond))
				}
				l, err := c.RWMutex(name).Lock(itest.CtxFor(t, 5*time.Second), opts...)
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				ctxs := make(chan context.Context, 64)
				if first == "before" {
					for i := 0; i < 64; i++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							time.Sleep(time.Duration(i%8) * time.Millisecond)
							var ctx context.Context
							if i%2 == 0 {
								ctx = l.Context()
								<-l.Done()
							} else {
								<-l.Done()
								ctx = l.Context()
							}
							ctxs <- ctx
						}()
					}
				}
				time.Sleep(4 * time.Millisecond)
				if e.end != nil {
					e.end(t, c, other, name, l)
				}
				waitCtx := itest.CtxFor(t, 10*time.Second)
				select {
				case <-l.Done():
				case <-waitCtx.Done():
					t.Fatal("Done never closed")
				}
				wg.Wait()
				close(ctxs)
				for ctx := range ctxs {
					if ctx != l.Context() {
						t.Fatal("two Contexts for one lease")
					}
				}
				checkEnded(t, e.name, l, e.lost)
				if e.name == "close" || e.name == "shutdown" {
					if !errors.Is(l.Err(), fairrw.ErrClosed) {
						t.Errorf("Err %v does not wrap ErrClosed", l.Err())
					}
				}
			})
		}
	}
}

// TestClientCostCloseCutsFrozenShutdown: on a frozen Redis, a Shutdown with a
// long ctx waits for an acquire and an Unlock under way; Close cuts it
// short, and every call, the Shutdown and the Close return at once, with
// no goroutine left.
func TestClientCostCloseCutsFrozenShutdown(t *testing.T) {
	r := redistest.StartProcess(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.Redisson()} {
		t.Run(p.String(), func(t *testing.T) {
			ctl := lateness.Start(t)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(20*time.Second))
			held, err := c.RWMutex("cc-cut-held-" + p.String()).Lock(itest.CtxFor(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			r.Pause(t)
			defer r.Resume(t)
			var wg sync.WaitGroup
			// Close and Shutdown wait for rueidis to close its connections
			// to the frozen server (about a second each): only the calls
			// are timed closely.
			timed := func(what string, bound time.Duration, f func() error) {
				defer wg.Done()
				start := time.Now()
				err := f()
				ctl.Within(fmt.Sprintf("%s once Close cut the Shutdown short (%v)", what, err), time.Since(start), bound)
			}
			wg.Add(4)
			go timed("Lock", 2*time.Second, func() error {
				_, err := c.RWMutex("cc-cut-" + p.String()).Lock(itest.CtxFor(t, 20*time.Second))
				return err
			})
			go timed("Unlock", 2*time.Second, func() error { return held.Unlock(itest.CtxFor(t, 20*time.Second)) })
			time.Sleep(100 * time.Millisecond)
			go timed("Shutdown", 15*time.Second, func() error { return c.Shutdown(itest.CtxFor(t, 20*time.Second)) })
			time.Sleep(100 * time.Millisecond)
			go timed("Close", 15*time.Second, c.Close)
			wg.Wait()
		})
	}
}

// TestClientCostLazyQuorumLeaseContext: a quorum lease's Done and Context, first
// asked for concurrently before or after it ends (unlocked; lost when a
// majority of its nodes are killed), are one Context, cancelled with the
// lease's Err as its cause.
func TestClientCostLazyQuorumLeaseContext(t *testing.T) {
	qn := itest.StartQuorumNodes(t, 3)
	q := qn.Quorum(t, itest.Transports[0], nil, fairrw.WithLeaseTime(900*time.Millisecond))
	for _, first := range []string{"before", "after"} {
		l, err := q.RWMutex("cc-quorum-unlock-" + first).Lock(itest.CtxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if first == "before" {
			_ = l.Done()
		}
		if err := l.Unlock(itest.CtxFor(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		checkEnded(t, "quorum unlock "+first, l, false)
	}
	l, err := q.RWMutex("cc-quorum-lost").Lock(itest.CtxFor(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() { defer wg.Done(); <-l.Context().Done(); <-l.Done() }()
	}
	qn.Kill(t, 0, 1)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("quorum lease not lost with a majority of its nodes killed")
	}
	wg.Wait()
	checkEnded(t, "quorum lost", l, true)
}
