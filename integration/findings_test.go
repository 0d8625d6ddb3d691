package integration

// Regression tests of an adversarial review's findings, one or more per
// finding (TestFinding1... to TestFinding9...). Each fails on the code the
// review was made against and passes since the redesign that followed it. They use only API
// that exists in both versions, but for findings_adapter_test.go: a new
// owner is a new handle (c.RWMutex(name) or c.Mutex(name)) per acquire, and
// a further hold of an owner goes through the adapter.
//
// This file: the helpers they share, and findings 7 (a shared handle
// excludes) and 8 (no key without a TTL).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/locktest"
	"github.com/fairrw/rwlock/internal/redistest"
)

// fTarget is what a finding runs over: a read-write lock under one policy,
// or the Mutex (Redisson's RLock format; its Client's policy is Redisson).
type fTarget struct {
	policy fairrw.Policy
	mutex  bool
}

func (tg fTarget) String() string {
	if tg.mutex {
		return "mutex"
	}
	return tg.policy.String()
}

// modes are the hold modes the target has.
func (tg fTarget) modes() []fairrw.Mode {
	if tg.mutex {
		return []fairrw.Mode{fairrw.Write}
	}
	return []fairrw.Mode{fairrw.Write, fairrw.Read}
}

// fRWTargets is every read-write lock policy.
func fRWTargets() []fTarget {
	var out []fTarget
	for _, p := range policies {
		out = append(out, fTarget{policy: p})
	}
	return out
}

// fAllTargets is every policy and the Mutex.
func fAllTargets() []fTarget {
	return append(fRWTargets(), fTarget{policy: fairrw.Redisson(), mutex: true})
}

// fFairTargets is the writer-preferring and phase-fair policies.
func fFairTargets() []fTarget {
	return []fTarget{{policy: fairrw.WriterPreferring()}, {policy: fairrw.PhaseFair()}}
}

// fClient is a Client of the target's policy on r, with client tracking
// (RESP3), closed at cleanup.
func fClient(t *testing.T, r *redistest.Redis, tg fTarget, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return newClient(t, r, transports[0], append([]fairrw.Option{fairrw.WithPolicy(tg.policy)}, opts...)...)
}

// fRaw is a plain client on r, to look at Redis.
func fRaw(t *testing.T, r *redistest.Redis) rueidis.Client {
	t.Helper()
	return r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
}

// fOwner is one lock owner: a handle of its own.
type fOwner struct {
	rw *fairrw.RWMutex
	mx *fairrw.Mutex
}

// owner returns a new owner of name on c.
func (tg fTarget) owner(c *fairrw.Client, name string) fOwner {
	if tg.mutex {
		return fOwner{mx: c.Mutex(name)}
	}
	return fOwner{rw: c.RWMutex(name)}
}

// acquire takes a first hold of mode: Lock/RLock with wait, TryLock/TryRLock
// without.
func (o fOwner) acquire(ctx context.Context, mode fairrw.Mode, wait bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	if o.mx != nil {
		if mode != fairrw.Write {
			return nil, fmt.Errorf("a mutex has no %s mode", mode)
		}
		if wait {
			return o.mx.Lock(ctx, opts...)
		}
		return o.mx.TryLock(ctx, opts...)
	}
	return locktest.Acquire(ctx, o.rw, mode, wait, opts...)
}

// further takes a further hold of mode from l, a live Lease of this owner
// (through the adapter).
func (o fOwner) further(ctx context.Context, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case o.mx != nil:
		return l.Lock(ctx, opts...)
	case mode == fairrw.Write:
		return l.Lock(ctx, opts...)
	default:
		return l.RLock(ctx, opts...)
	}
}

// fMust fails t unless err is nil.
func fMust(t *testing.T, what string, l *fairrw.Lease, err error) *fairrw.Lease {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return l
}

// fFirst takes a first hold of mode for a new owner and returns both.
func fFirst(t *testing.T, tg fTarget, c *fairrw.Client, name string, mode fairrw.Mode, opts ...fairrw.AcquireOption) (fOwner, *fairrw.Lease) {
	t.Helper()
	o := tg.owner(c, name)
	l, err := o.acquire(testCtx(t), mode, true, opts...)
	return o, fMust(t, fmt.Sprintf("first %s of %q", mode, name), l, err)
}

// fFurther takes a further hold of mode from l.
func fFurther(t *testing.T, o fOwner, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	got, err := o.further(testCtx(t), l, mode, opts...)
	return fMust(t, fmt.Sprintf("further %s from the owner's %s Lease of %q", mode, hidden.Mode(l), hidden.Name(l)), got, err)
}

// fUnlock unlocks l and fails t (naming the finding) unless Unlock returns nil.
func fUnlock(t *testing.T, finding string, l *fairrw.Lease) {
	t.Helper()
	if err := l.Unlock(testCtx(t)); err != nil {
		t.Fatalf("%s: Unlock of a live %s Lease of %q: %v", finding, hidden.Mode(l), hidden.Name(l), err)
	}
}

// fAwaitDone waits for l to end (its own lease running out), at most within.
func fAwaitDone(t *testing.T, l *fairrw.Lease, within time.Duration) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(within):
		t.Fatalf("the %s Lease of %q did not end within %v", hidden.Mode(l), hidden.Name(l), within)
	}
}

// fExcludedWhileLive polls, until live's Deadline (less a margin), that a new
// owner is refused each of modes in turn. It fails t, naming the finding, as
// soon as another owner is granted while live has not passed its Deadline,
// or if live ends before it.
func fExcludedWhileLive(t *testing.T, finding string, tg fTarget, c *fairrw.Client, raw rueidis.Client, live *fairrw.Lease, modes ...fairrw.Mode) {
	t.Helper()
	const margin = 150 * time.Millisecond
	name := hidden.Name(live)
	began := time.Now()
	for i := 0; time.Until(live.Deadline()) > margin; i++ {
		select {
		case <-live.Done():
			t.Fatalf("%s: the owner's live %s Lease of %q ended %v before its Deadline: %v",
				finding, hidden.Mode(live), name, time.Until(live.Deadline()).Round(time.Millisecond), live.Err())
		default:
		}
		mode := modes[i%len(modes)]
		keys := fDescribe(t, raw, name)
		l, err := tg.owner(c, name).acquire(testCtx(t), mode, false)
		left := time.Until(live.Deadline())
		if err == nil {
			_ = l.Unlock(testCtx(t))
			if left > 0 {
				t.Fatalf("%s: another owner got the %s of %q %v into the check, while a live %s Lease of the first owner holds it %v more (until its Deadline); keys just before: %s",
					finding, mode, name, time.Since(began).Round(time.Millisecond), hidden.Mode(live), left.Round(time.Millisecond), keys)
			}
			return
		}
		if !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Fatalf("%s: another owner's try of the %s of %q: %v, want ErrNotAcquired", finding, mode, name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if time.Since(began) < 100*time.Millisecond {
		t.Fatalf("harness: the live Lease of %q had no time left to check (%v)", name, time.Until(live.Deadline()))
	}
}

// fFreeNow checks that the lock is free at once: a new owner's TryLock (the
// write, which every hold excludes) succeeds.
func fFreeNow(t *testing.T, finding string, tg fTarget, c *fairrw.Client, raw rueidis.Client, name string) {
	t.Helper()
	l, err := tg.owner(c, name).acquire(testCtx(t), fairrw.Write, false)
	if err != nil {
		t.Fatalf("%s: every live Lease of the owner was unlocked (nil errors), yet another owner's TryLock of %q is refused: %v; keys: %s",
			finding, name, err, fDescribe(t, raw, name))
	}
	if err := l.Unlock(testCtx(t)); err != nil {
		t.Fatalf("unlock of the other owner's write of %q: %v", name, err)
	}
}

// fKeys lists the keys in Redis that mention part ("" for every key).
func fKeys(t testing.TB, raw rueidis.Client, part string) []string {
	t.Helper()
	all, err := raw.Do(testCtx(t), raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	var out []string
	for _, k := range all {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	return out
}

// fPTTL returns key's PTTL in milliseconds (-1: no TTL, -2: missing).
func fPTTL(t testing.TB, raw rueidis.Client, key string) int64 {
	t.Helper()
	n, err := raw.Do(testCtx(t), raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

// fDescribe lists the keys mentioning name with their PTTL, for failure
// reports.
func fDescribe(t testing.TB, raw rueidis.Client, name string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range fKeys(t, raw, name) {
		fmt.Fprintf(&b, "%s (pttl %dms", k, fPTTL(t, raw, k))
		if h, err := raw.Do(testCtx(t), raw.B().Hgetall().Key(k).Build()).AsStrMap(); err == nil {
			fmt.Fprintf(&b, ", hash %v", h)
		}
		b.WriteString(") ")
	}
	if b.Len() == 0 {
		return "none"
	}
	return strings.TrimSpace(b.String())
}

// fNoKeyWithoutTTL fails t if a key mentioning part has no TTL.
func fNoKeyWithoutTTL(t *testing.T, finding string, raw rueidis.Client, part string) {
	t.Helper()
	var forever []string
	for _, k := range fKeys(t, raw, part) {
		if fPTTL(t, raw, k) == -1 {
			forever = append(forever, k)
		}
	}
	if len(forever) > 0 {
		t.Fatalf("%s: keys without a TTL: %v", finding, forever)
	}
}

// --- Finding 7 ---------------------------------------------------------------

const finding7 = "finding 7 (a shared handle gives no exclusion)"

// fInside counts the goroutines inside a lock and the most at once.
type fInside struct {
	now, most atomic.Int64
}

func (x *fInside) enter() {
	n := x.now.Add(1)
	for {
		m := x.most.Load()
		if n <= m || x.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (x *fInside) leave() { x.now.Add(-1) }

// fHammerShared has 8 goroutines take the write lock through one shared
// acquire function twice each, holding it a moment, and returns the most
// that were inside at once.
func fHammerShared(t *testing.T, lock func(context.Context) (func() error, error)) int64 {
	t.Helper()
	const goroutines, rounds = 8, 2
	var inside fInside
	start := make(chan struct{})
	errs := make(chan error, goroutines*rounds)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				unlock, err := lock(ctx)
				if err != nil {
					cancel()
					errs <- err
					return
				}
				inside.enter()
				time.Sleep(30 * time.Millisecond)
				inside.leave()
				if err := unlock(); err != nil {
					errs <- err
				}
				cancel()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%s: Lock or Unlock on the shared handle: %v", finding7, err)
	}
	return inside.most.Load()
}

// TestFinding7SharedHandleExcludes: a handle shared by goroutines excludes
// like a sync.RWMutex: every Lock on it excludes every other Lock and RLock,
// whoever calls (the RWMutex under every policy, the Mutex, the quorum).
func TestFinding7SharedHandleExcludes(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, tg := range fAllTargets() {
		t.Run("writers/"+tg.String(), func(t *testing.T) {
			c := fClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f7:writers:" + tg.String()
			var lock func(context.Context) (func() error, error)
			if tg.mutex {
				shared := c.Mutex(name)
				lock = func(ctx context.Context) (func() error, error) {
					l, err := shared.Lock(ctx)
					if err != nil {
						return nil, err
					}
					return func() error { return l.Unlock(ctx) }, nil
				}
			} else {
				shared := c.RWMutex(name)
				lock = func(ctx context.Context) (func() error, error) {
					l, err := shared.Lock(ctx)
					if err != nil {
						return nil, err
					}
					return func() error { return l.Unlock(ctx) }, nil
				}
			}
			if most := fHammerShared(t, lock); most > 1 {
				t.Fatalf("%s: %d goroutines sharing one %s handle were inside the write lock at once", finding7, most, tg)
			}
		})
	}
	for _, tg := range fRWTargets() {
		t.Run("write-excludes-read/"+tg.String(), func(t *testing.T) {
			c := fClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f7:write-read:" + tg.String()
			shared := c.RWMutex(name)
			ctx := testCtx(t)
			w, err := shared.Lock(ctx)
			fMust(t, "Lock on the shared handle", w, err)
			got := make(chan error, 1)
			go func() { // another goroutine, the same handle
				l, err := shared.TryRLock(ctx)
				if err == nil {
					_ = l.Unlock(ctx)
				}
				got <- err
			}()
			if err := <-got; !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("%s: while one goroutine holds the write through a shared handle, another's TryRLock on it returned %v, want ErrNotAcquired", finding7, err)
			}
			fUnlock(t, finding7, w)
		})
		t.Run("read-then-write/"+tg.String(), func(t *testing.T) {
			c := fClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f7:read-write:" + tg.String()
			shared := c.RWMutex(name)
			rd, err := shared.RLock(testCtx(t))
			fMust(t, "RLock on the shared handle", rd, err)
			got := make(chan error, 1)
			go func() { // another goroutine waits for the write, as with sync.RWMutex
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				l, err := shared.Lock(ctx)
				if err == nil {
					err = l.Unlock(ctx)
				}
				got <- err
			}()
			select {
			case err := <-got:
				t.Fatalf("%s: while one goroutine holds a read through a shared handle, another's Lock on it returned at once (%v); want it to wait for the read", finding7, err)
			case <-time.After(300 * time.Millisecond):
			}
			fUnlock(t, finding7, rd)
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("%s: Lock on the shared handle after the read was released: %v", finding7, err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("%s: Lock on the shared handle not granted after the read was released", finding7)
			}
		})
	}
	qn := startQuorumNodes(t, 3)
	for _, p := range policies {
		t.Run("quorum/"+p.String(), func(t *testing.T) {
			q := qn.quorum(t, transports[0], nil, fairrw.WithPolicy(p), fairrw.WithLeaseTime(3*time.Second))
			shared := q.RWMutex("f7:quorum:" + p.String())
			most := fHammerShared(t, func(ctx context.Context) (func() error, error) {
				l, err := shared.Lock(ctx)
				if err != nil {
					return nil, err
				}
				return func() error { return l.Unlock(ctx) }, nil
			})
			if most > 1 {
				t.Fatalf("%s: %d goroutines sharing one quorum handle (%s) were inside the write lock at once", finding7, most, p)
			}
		})
	}
}

// --- Finding 8 ---------------------------------------------------------------

const finding8 = "finding 8 (one key without a TTL per lock name, forever)"

// TestFinding8NoKeyWithoutTTL: 1,000 lock names are used (writes, some
// reads; most unlocked, some left to expire), under every policy and as the
// Mutex. Once the holds end and their leases pass, nothing is left in Redis:
// KEYS * is empty, and no key ever lacks a TTL.
func TestFinding8NoKeyWithoutTTL(t *testing.T) {
	r := redistest.StartProcess(t) // this test's own: KEYS * sees only its keys
	raw := fRaw(t, r)
	const names, workers = 1000, 16
	const short = 300 * time.Millisecond
	for _, tg := range fAllTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			if err := raw.Do(testCtx(t), raw.B().Flushall().Build()).Error(); err != nil {
				t.Fatal(err)
			}
			c := fClient(t, r, tg, fairrw.WithUnlockTimeout(300*time.Millisecond), fairrw.WithLeaseTime(time.Second))
			next := make(chan int)
			errs := make(chan error, workers)
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						if err := fUseName(c, tg, fmt.Sprintf("f8:%s:order-%d", tg, i), i, short); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			for i := range names {
				next <- i
			}
			close(next)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("using the names: %v", err)
			}
			// Every hold has ended or will within short; latches live at most
			// the unlock timeout.
			deadline := time.Now().Add(short + 2*time.Second)
			for {
				keys := fKeys(t, raw, "")
				if len(keys) == 0 {
					return
				}
				if time.Now().After(deadline) {
					var forever []string
					for _, k := range keys {
						if fPTTL(t, raw, k) == -1 {
							forever = append(forever, k)
						}
					}
					sample := keys[:min(3, len(keys))]
					t.Fatalf("%s: %d keys left in Redis after %d names were used under %s and every lease passed (%d of them without a TTL), e.g. %v",
						finding8, len(keys), names, tg, len(forever), sample)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// fUseName uses one lock name as an application would: a write, unlocked
// (every tenth left to run out its short lease instead), and for a read-write
// lock every fifth name also a read, unlocked.
func fUseName(c *fairrw.Client, tg fTarget, name string, i int, short time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if i%10 == 0 {
		_, err := tg.owner(c, name).acquire(ctx, fairrw.Write, true, fairrw.WithLease(short))
		return err
	}
	w, err := tg.owner(c, name).acquire(ctx, fairrw.Write, true, fairrw.WithLease(5*time.Second))
	if err != nil {
		return err
	}
	if err := w.Unlock(ctx); err != nil {
		return err
	}
	if tg.mutex || i%5 != 1 {
		return nil
	}
	rd, err := tg.owner(c, name).acquire(ctx, fairrw.Read, true, fairrw.WithLease(5*time.Second))
	if err != nil {
		return err
	}
	return rd.Unlock(ctx)
}
