package behaviour

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// fFairTargets is the writer-preferring and phase-fair policies.
func fFairTargets() []itest.FTarget {
	return []itest.FTarget{{Policy: fairrw.WriterPreferring()}, {Policy: fairrw.PhaseFair()}}
}

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

// TestSharedHandleExcludes: a handle shared by goroutines excludes
// like a sync.RWMutex: every Lock on it excludes every other Lock and RLock,
// whoever calls (the RWMutex under every policy, the Mutex, the quorum).
func TestSharedHandleExcludes(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, tg := range itest.FAllTargets() {
		t.Run("writers/"+tg.String(), func(t *testing.T) {
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f7:writers:" + tg.String()
			var lock func(context.Context) (func() error, error)
			if tg.Mutex {
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
	for _, tg := range itest.FRWTargets() {
		t.Run("write-excludes-read/"+tg.String(), func(t *testing.T) {
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f7:write-read:" + tg.String()
			shared := c.RWMutex(name)
			ctx := itest.TestCtx(t)
			w, err := shared.Lock(ctx)
			itest.FMust(t, "Lock on the shared handle", w, err)
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
			itest.FUnlock(t, finding7, w)
		})
		t.Run("read-then-write/"+tg.String(), func(t *testing.T) {
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f7:read-write:" + tg.String()
			shared := c.RWMutex(name)
			rd, err := shared.RLock(itest.TestCtx(t))
			itest.FMust(t, "RLock on the shared handle", rd, err)
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
			itest.FUnlock(t, finding7, rd)
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
	qn := itest.StartQuorumNodes(t, 3)
	for _, p := range itest.Policies {
		t.Run("quorum/"+p.String(), func(t *testing.T) {
			q := qn.Quorum(t, itest.Transports[0], nil, fairrw.WithPolicy(p), fairrw.WithLeaseTime(3*time.Second))
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

const finding8 = "finding 8 (one key without a TTL per lock name, forever)"

// TestNoKeyWithoutTTL: 1,000 lock names are used (writes, some
// reads; most unlocked, some left to expire), under every policy and as the
// Mutex. Once the holds end and their leases pass, nothing is left in Redis:
// KEYS * is empty, and no key ever lacks a TTL.
func TestNoKeyWithoutTTL(t *testing.T) {
	r := redistest.StartProcess(t) // this test's own: KEYS * sees only its keys
	raw := itest.FRaw(t, r)
	const names, workers = 1000, 16
	const short = 300 * time.Millisecond
	// An Unlock that Redis does not answer within the unlock timeout fails
	// (its release goes on in the background): 2 s, so that a loaded
	// machine's slow answers (16 workers, two suites side by side: 300 ms
	// was not enough) do not end the test before its check.
	const unlockTimeout = 2 * time.Second
	for _, tg := range itest.FAllTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			if err := raw.Do(itest.TestCtx(t), raw.B().Flushall().Build()).Error(); err != nil {
				t.Fatal(err)
			}
			c := itest.FClient(t, r, tg, fairrw.WithUnlockTimeout(unlockTimeout), fairrw.WithLeaseTime(time.Second))
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
			deadline := time.Now().Add(short + unlockTimeout + 2*time.Second)
			for {
				keys := itest.FKeys(t, raw, "")
				if len(keys) == 0 {
					return
				}
				if time.Now().After(deadline) {
					var forever []string
					for _, k := range keys {
						if itest.FPTTL(t, raw, k) == -1 {
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
func fUseName(c *fairrw.Client, tg itest.FTarget, name string, i int, short time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if i%10 == 0 {
		_, err := tg.Owner(c, name).Acquire(ctx, fairrw.Write, true, fairrw.WithLease(short))
		return err
	}
	w, err := tg.Owner(c, name).Acquire(ctx, fairrw.Write, true, fairrw.WithLease(5*time.Second))
	if err != nil {
		return err
	}
	if err := w.Unlock(ctx); err != nil {
		return err
	}
	if tg.Mutex || i%5 != 1 {
		return nil
	}
	rd, err := tg.Owner(c, name).Acquire(ctx, fairrw.Read, true, fairrw.WithLease(5*time.Second))
	if err != nil {
		return err
	}
	return rd.Unlock(ctx)
}
