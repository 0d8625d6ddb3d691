package contender_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// grantBound bounds a wait that must end: generous, not a speed assertion
// (redsync polls every 50-250ms, redislock every 100ms).
const grantBound = 5 * time.Second

func TestList(t *testing.T) {
	var names []string
	for _, c := range contender.All() {
		names = append(names, c.Name)
		if c.Library == "" || c.Wake == "" || c.Settings == "" || c.Open == nil {
			t.Errorf("%s: Library, Wake, Settings and Open must be set: %+v", c.Name, c)
		}
		if c.Reads != (c.Library == "fairrw") {
			t.Errorf("%s: Reads = %v, want it for the fairrw policies only", c.Name, c.Reads)
		}
	}
	want := []string{"redisson", "writer-preferring", "phase-fair", "rueidislock", "redislock", "redsync"}
	if !slices.Equal(names, want) {
		t.Errorf("All() = %v, want %v", names, want)
	}
	if n := len(contender.Policies()) + len(contender.Peers()); n != len(want) {
		t.Errorf("Policies and Peers have %d contenders, want %d", n, len(want))
	}
	extras := contender.Extras()
	if len(extras) != 1 || extras[0].Name != "mutex" || extras[0].Library != "fairrw" || extras[0].Reads || !extras[0].Renews ||
		extras[0].Wake == "" || extras[0].Settings == "" || extras[0].Open == nil {
		t.Errorf("Extras() = %+v, want fairrw's Mutex alone, without reads", extras)
	}
}

// every returns All then Extras: every contender the checks below apply to.
func every() []contender.Contender { return append(contender.All(), contender.Extras()...) }

// TestContenders checks the common semantics of every contender against one
// real Redis.
func TestContenders(t *testing.T) {
	r := redistest.Start(t)
	for _, c := range every() {
		t.Run(c.Name, func(t *testing.T) {
			opt := r.ClientOption()
			if err := c.Supports(opt, false); err != nil {
				t.Fatalf("Supports(redis-server) = %v", err)
			}
			testContender(t, c, opt)
		})
	}
}

// TestMiniredis runs the basic checks on miniredis for the contenders that
// say they support it.
func TestMiniredis(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	for _, c := range every() {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Supports(opt, true)
			if (err == nil) != (c.Name != "rueidislock") {
				t.Fatalf("Supports(miniredis) = %v", err)
			}
			if err != nil {
				return // rueidislock: its refusal is what this subtest checks
			}
			a, b := open(t, c, opt), open(t, c, opt)
			testTryBusy(t, c, a, b, name(t))
			testBlockedGranted(t, c, a, b, name(t))
		})
	}
}

func TestSupports(t *testing.T) {
	base := rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}
	noCache := base
	noCache.DisableCache = true
	resp2 := base
	resp2.AlwaysRESP2 = true
	resp2NoCache := noCache
	resp2NoCache.AlwaysRESP2 = true
	for _, c := range every() {
		rueidisBased := c.Library == "fairrw" || c.Name == "rueidislock"
		for _, tc := range []struct {
			name      string
			opt       rueidis.ClientOption
			miniredis bool
			ok        bool
		}{
			{"redis-server", base, false, true},
			{"no-address", rueidis.ClientOption{}, false, false},
			{"DisableCache", noCache, false, c.Name != "rueidislock"},
			{"AlwaysRESP2", resp2, false, !rueidisBased},
			{"AlwaysRESP2+DisableCache", resp2NoCache, false, c.Name != "rueidislock"},
			{"miniredis", base, true, !rueidisBased},
			{"miniredis+DisableCache", resp2NoCache, true, c.Name != "rueidislock"},
		} {
			err := c.Supports(tc.opt, tc.miniredis)
			if (err == nil) != tc.ok {
				t.Errorf("%s: Supports(%s) = %v, want ok %v", c.Name, tc.name, err, tc.ok)
			}
		}
	}
}

func testContender(t *testing.T, c contender.Contender, opt rueidis.ClientOption) {
	before := slices.Clone(opt.InitAddress)
	a, b := open(t, c, opt), open(t, c, opt)
	if !slices.Equal(opt.InitAddress, before) {
		t.Fatalf("Open changed the caller's InitAddress: %v, was %v", opt.InitAddress, before)
	}
	t.Run("try-busy", func(t *testing.T) { testTryBusy(t, c, a, b, name(t)) })
	t.Run("blocked-granted", func(t *testing.T) { testBlockedGranted(t, c, a, b, name(t)) })
	t.Run("ctx-ends-while-held", func(t *testing.T) { testCtxEnds(t, a, b, name(t)) })
	t.Run("hold-outlives-acquire-ctx", func(t *testing.T) { testHoldOutlivesCtx(t, a, b, name(t)) })
	t.Run("unlock-twice", func(t *testing.T) { testUnlockTwice(t, a, name(t)) })
	t.Run("reads", func(t *testing.T) { testReads(t, c, a, b, name(t)) })
	t.Run("exclusion", func(t *testing.T) { testExclusion(t, c, []contender.Client{a, b}, name(t)) })
}

func open(t *testing.T, c contender.Contender, opt rueidis.ClientOption) contender.Client {
	t.Helper()
	cl, err := c.Open(opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// name returns a lock name unique to the (sub)test.
func name(t *testing.T) string { return "contender-test:" + t.Name() }

// acquire takes m's lock as a writer within grantBound. A contender known
// to lose wake-ups (lostWakeups) may also miss a free lock: its Acquire on
// a name nobody held ran out of 5 s with two suites side by side (an
// attempt that outran its own time for one try then waits for a release
// that never comes). Its Acquire is made again, three at most; any other
// contender's must be granted the first time.
func acquire(t *testing.T, m contender.Mutex) fairness.Hold {
	t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), grantBound)
		h, err := m.Acquire(ctx, fairness.Writer)
		cancel()
		if err == nil {
			return h
		}
		if try == 3 || !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(m.Owner(), lostWakeupsPeer+":") {
			t.Fatalf("%s Acquire (try %d): %v", m.Owner(), try, err)
		}
		t.Logf("%s Acquire not granted within %v (a lost wake-up): try %d", m.Owner(), grantBound, try+1)
	}
}

func unlock(t *testing.T, h fairness.Hold) {
	t.Helper()
	if err := h.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// tryAcquire is m.TryAcquire with a ctx that never ends. A try that ran
// out of the contender's own time for one attempt says nothing of the
// lock: rueidislock gives each attempt TryNextAfter, 20 ms by default,
// which a loaded machine can outrun (with two suites side by side). It is
// made again, three tries at most.
func tryAcquire(t *testing.T, m contender.Mutex, class fairness.Class) (fairness.Hold, error) {
	t.Helper()
	h, err := m.TryAcquire(context.Background(), class)
	for try := 2; try <= 3 && errors.Is(err, context.DeadlineExceeded); try++ {
		t.Logf("%s TryAcquire(%s) ran out of its own time: %v; try %d", m.Owner(), class, err, try)
		h, err = m.TryAcquire(context.Background(), class)
	}
	return h, err
}

// wantBusy checks that m cannot take the lock now.
func wantBusy(t *testing.T, m contender.Mutex, class fairness.Class) {
	t.Helper()
	h, err := tryAcquire(t, m, class)
	if err == nil {
		_ = h.Unlock(context.Background())
		t.Fatalf("%s TryAcquire(%s) granted while the lock is held elsewhere", m.Owner(), class)
	}
	if !errors.Is(err, contender.ErrBusy) {
		t.Fatalf("%s TryAcquire(%s) = %v, want ErrBusy", m.Owner(), class, err)
	}
}

func testTryBusy(t *testing.T, c contender.Contender, a, b contender.Client, lock string) {
	holder := acquire(t, a.Mutex(lock))
	if l, ok := holder.(*fairrw.Lease); ok != (c.Library == "fairrw") {
		t.Errorf("Acquire's hold is a %T", holder)
	} else if ok && l.Token() == 0 {
		t.Errorf("a fairrw write hold has token 0")
	}
	other := b.Mutex(lock)
	wantBusy(t, other, fairness.Writer)
	wantBusy(t, a.Mutex(lock), fairness.Writer) // another owner of the same Client
	unlock(t, holder)
	h, err := tryAcquire(t, other, fairness.Writer)
	if err != nil {
		t.Fatalf("TryAcquire after Unlock: %v", err)
	}
	if _, isLease := h.(*fairrw.Lease); isLease != (c.Library == "fairrw") {
		t.Errorf("TryAcquire's hold is a %T", h)
	}
	wantBusy(t, a.Mutex(lock), fairness.Writer)
	unlock(t, h)
}

// testBlockedGranted: an Acquire made while the lock is held is granted
// after the Unlock, and says it waited. Its first attempt is given 100 ms
// to fail before the Unlock; a machine that held the test up for a
// quarter of that (the lateness control saw it: a waiter's goroutine can
// be held up longer than the control's bare waits, 48 ms seen beside a
// second suite) may not have run it by then, and a
// grant without waiting then says nothing of the contender: the case is
// run again, three times at most.
func testBlockedGranted(t *testing.T, c contender.Contender, a, b contender.Client, lock string) {
	ctl := lateness.Start(t)
	for try := 1; ; try++ {
		start := time.Now()
		unlocked, waited := blockedGranted(t, c, a, b, fmt.Sprint(lock, ":", try))
		if waited {
			return
		}
		if stall := ctl.WorstStall(start, unlocked, false); try == 3 || stall < 25*time.Millisecond {
			t.Fatalf("a waiter blocked for 100ms says it was granted without waiting (the control's worst stall before the Unlock: %v)", stall)
		}
		t.Logf("try %d: granted without waiting while the machine stalled: trying again", try)
	}
}

// blockedGranted is one try of testBlockedGranted: it returns when the
// Unlock was made, and whether the Acquire said it waited (true too when
// the contender loses wake-ups and lost this one).
func blockedGranted(t *testing.T, c contender.Contender, a, b contender.Client, lock string) (unlocked time.Time, waited bool) {
	holder := acquire(t, a.Mutex(lock))
	type result struct {
		h   fairness.Hold
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		h, err := b.Mutex(lock).Acquire(ctx, fairness.Writer)
		done <- result{h, err}
	}()
	time.Sleep(100 * time.Millisecond) // the waiter's first attempt fails (not checked exactly)
	select {
	case r := <-done:
		t.Fatalf("Acquire returned while the lock was held: %v, %v", r.h, r.err)
	default:
	}
	unlocked = time.Now()
	unlock(t, holder)
	var r result
	select {
	case r = <-done:
	case <-time.After(grantBound):
		if !lostWakeups(c) {
			t.Fatalf("blocked Acquire not granted within %v of the Unlock", grantBound)
		}
		cancel()
		if r = <-done; r.err == nil {
			break // granted just now
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("blocked Acquire, cancelled: %v", r.err)
		}
		t.Logf("%s: lost wake-up: the blocked Acquire was not granted within %v of the Unlock", c.Name, grantBound)
		unlock(t, acquire(t, b.Mutex(lock))) // the lock is free
		return unlocked, true
	}
	if r.err != nil {
		t.Fatalf("blocked Acquire: %v", r.err)
	}
	t.Logf("granted %v after Unlock, woken by %q", time.Since(unlocked), fairness.WokenBy(r.h))
	unlock(t, r.h)
	return unlocked, fairness.WokenBy(r.h) != ""
}

// lostWakeups says whether c's blocking acquire is known to miss a release
// now and then, a waiter then waiting until its ctx ends: rueidislock, whose
// try (lock.go) starts a failed key's monitoring goroutine before counting
// the failure, so that the goroutine can take the failed attempt for a
// release, drop the waiter from its gate's count and delete the gate it
// waits on. Rare in a plain run, frequent under the race detector.
func lostWakeups(c contender.Contender) bool { return c.Name == lostWakeupsPeer }

// lostWakeupsPeer names the one contender lostWakeups holds true of; its
// handles' Owner starts with it.
const lostWakeupsPeer = "rueidislock"

func testCtxEnds(t *testing.T, a, b contender.Client, lock string) {
	holder := acquire(t, a.Mutex(lock))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	h, err := b.Mutex(lock).Acquire(ctx, fairness.Writer)
	if err == nil {
		_ = h.Unlock(context.Background())
		t.Fatal("Acquire granted while the lock is held")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > grantBound {
		t.Errorf("Acquire returned %v after its ctx's 300ms deadline", d)
	}
	// A cancelled wait leaves nothing held: the lock is free after Unlock.
	unlock(t, holder)
	h = acquire(t, b.Mutex(lock))
	unlock(t, h)
}

// testHoldOutlivesCtx: a hold lasts until Unlock, also after the ctx it was
// acquired with ends (fairness.Loop cancels it right after the grant).
func testHoldOutlivesCtx(t *testing.T, a, b contender.Client, lock string) {
	ctx, cancel := context.WithTimeout(context.Background(), grantBound)
	h, err := a.Mutex(lock).Acquire(ctx, fairness.Writer)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	wantBusy(t, b.Mutex(lock), fairness.Writer)
	unlock(t, h)
}

func testUnlockTwice(t *testing.T, a contender.Client, lock string) {
	h := acquire(t, a.Mutex(lock))
	unlock(t, h)
	if err := h.Unlock(context.Background()); err == nil {
		t.Error("a second Unlock of one hold returned nil")
	}
}

func testReads(t *testing.T, c contender.Contender, a, b contender.Client, lock string) {
	ctx := context.Background()
	if !c.Reads {
		m := a.Mutex(lock)
		if _, err := m.Acquire(ctx, fairness.Reader); !errors.Is(err, contender.ErrNoReads) {
			t.Errorf("Acquire(Reader) = %v, want ErrNoReads", err)
		}
		if _, err := m.TryAcquire(ctx, fairness.Reader); !errors.Is(err, contender.ErrNoReads) {
			t.Errorf("TryAcquire(Reader) = %v, want ErrNoReads", err)
		}
		return
	}
	r1, err := a.Mutex(lock).Acquire(ctx, fairness.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Mutex(lock).TryAcquire(ctx, fairness.Reader)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	wantBusy(t, b.Mutex(lock), fairness.Writer)
	unlock(t, r1)
	unlock(t, r2)
	w := acquire(t, b.Mutex(lock))
	wantBusy(t, a.Mutex(lock), fairness.Reader)
	unlock(t, w)
}

// testExclusion: goroutines on two Clients, each its own handle, take the
// lock in turn; a shared counter must never see two holders. An acquire is
// bounded by grantBound; a contender known to lose wake-ups retries after a
// timeout, any other fails.
func testExclusion(t *testing.T, c contender.Contender, clients []contender.Client, lock string) {
	const goroutines, rounds = 4, 5
	var holders, grants, timeouts atomic.Int32
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		m := clients[g%len(clients)].Mutex(lock)
		wg.Go(func() {
			for range rounds {
				var h fairness.Hold
				for h == nil {
					ctx, cancel := context.WithTimeout(context.Background(), grantBound)
					var err error
					h, err = m.Acquire(ctx, fairness.Writer)
					cancel()
					if errors.Is(err, context.DeadlineExceeded) && lostWakeups(c) && timeouts.Add(1) < 10 {
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", m.Owner(), err)
						return
					}
				}
				if n := holders.Add(1); n != 1 {
					errs <- fmt.Errorf("%s: %d holders at once", m.Owner(), n)
				}
				grants.Add(1)
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				if err := h.Unlock(context.Background()); err != nil {
					errs <- fmt.Errorf("%s unlock: %w", m.Owner(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := grants.Load(); n != goroutines*rounds {
		t.Errorf("%d grants, want %d", n, goroutines*rounds)
	}
	if n := timeouts.Load(); n > 0 {
		t.Logf("%s: %d acquires not granted within %v (lost wake-ups), retried", c.Name, n, grantBound)
	}
}

// TestOpenLeased: a renewing contender keeps a hold past its lease; the
// others refuse OpenLeased. (A lease of a second: with 300 ms, rueidislock
// did not acquire a free lock within 5 s on a loaded machine, two suites
// side by side, each try's key validity used up before it was confirmed.)
func TestOpenLeased(t *testing.T) {
	r := redistest.Start(t)
	const lease = time.Second
	for _, c := range every() {
		t.Run(c.Name, func(t *testing.T) {
			cl, interval, err := c.OpenLeased(r.ClientOption(), lease)
			if !c.Renews {
				if err == nil {
					cl.Close()
					t.Fatal("OpenLeased succeeded for a contender that does not renew")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			if interval <= 0 || interval >= lease {
				t.Errorf("renewal interval %v for a %v lease", interval, lease)
			}
			other := open(t, c, r.ClientOption())
			h := acquire(t, cl.Mutex(name(t)))
			time.Sleep(3 * lease)
			wantBusy(t, other.Mutex(name(t)), fairness.Writer)
			unlock(t, h)
		})
	}
}

// TestRueidislockLost: a rueidislock hold whose key is deleted reports it
// through Err, and its Unlock fails.
func TestRueidislockLost(t *testing.T) {
	r := redistest.Start(t)
	raw := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	c := contender.Peers()[0]
	if c.Name != "rueidislock" {
		t.Fatalf("Peers()[0] is %s", c.Name)
	}
	h := acquire(t, open(t, c, r.ClientOption()).Mutex(name(t)))
	e, ok := h.(interface{ Err() error })
	if !ok {
		t.Fatalf("a rueidislock hold (%T) has no Err method", h)
	}
	if err := e.Err(); err != nil {
		t.Fatalf("Err while held: %v", err)
	}
	ctx := context.Background()
	if err := raw.Do(ctx, raw.B().Del().Key("rueidislock:0:"+name(t)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(grantBound)
	for e.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if e.Err() == nil {
		t.Fatal("Err still nil after the key was deleted")
	}
	if err := h.Unlock(ctx); err == nil {
		t.Error("Unlock of a lost hold returned nil")
	}
}
