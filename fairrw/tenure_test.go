package fairrw_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/locktest"
)

// TestTenureOwner: a handle keeps its owner while it holds or acquires
// anything (reentrant holds and a downgrade share it, and keep the write's
// token); Owner still names it after the tenure ended; the next acquire
// begins a new tenure under a new owner, whether the last one ended by
// Unlock or by loss.
func TestTenureOwner(t *testing.T) {
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			c := miniEnv(t, p).New(t, fairrw.WithPolicy(p))
			ctx := tenureCtx(t)
			m := c.RWMutex("tenure")
			first := m.Owner()
			if want := c.ID() + ":" + strconv.FormatUint(m.OwnerID(), 10); first != want {
				t.Fatalf("Owner() = %q, want %q", first, want)
			}
			w1 := tenureLock(t, m, fairrw.Write)
			w2 := tenureLock(t, m, fairrw.Write)
			r := tenureLock(t, m, fairrw.Read)
			if m.Owner() != first || w2.Token() != w1.Token() {
				t.Fatalf("reentrant holds: owner %q (first %q), tokens %d, %d", m.Owner(), first, w1.Token(), w2.Token())
			}
			tenureUnlock(t, w1)
			tenureUnlock(t, w2)
			tenureUnlock(t, r)
			if m.Owner() != first {
				t.Fatalf("Owner() = %q after the first tenure, want its owner %q", m.Owner(), first)
			}

			// A lease that ends by loss ends the tenure as well.
			lost := tenureLock(t, m, fairrw.Write, fairrw.WithLease(100*time.Millisecond))
			second := m.Owner()
			if second == first || lost.Token() <= w1.Token() {
				t.Fatalf("new tenure: owner %q (first %q), token %d (first %d)", second, first, lost.Token(), w1.Token())
			}
			<-lost.Done()
			if err := lost.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
				t.Fatalf("Unlock of a lost lease: %v, want ErrNotHeld", err)
			}
			if m.Owner() != second {
				t.Fatalf("Owner() = %q after the lost lease, want its owner %q", m.Owner(), second)
			}
			third := tenureLock(t, m, fairrw.Write)
			if m.Owner() == second || third.Token() <= lost.Token() {
				t.Fatalf("tenure after a loss: owner %q (lost %q), token %d (lost %d)", m.Owner(), second, third.Token(), lost.Token())
			}
			tenureUnlock(t, third)
		})
	}
}

// TestTenureConcurrentHolds: goroutines sharing one handle start and end
// tenures concurrently; each hold is unlocked under the owner it was granted
// under, so every Unlock finds it.
func TestTenureConcurrentHolds(t *testing.T) {
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			env := miniEnv(t, p)
			m := env.New(t, fairrw.WithPolicy(p)).RWMutex("tenure:concurrent")
			ctx := tenureCtx(t)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 20 {
						l, err := m.RLock(ctx)
						if err == nil {
							err = l.Unlock(ctx)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			locktest.EventuallyNoKeys(t, env, m.Name())
		})
	}
}

func tenureCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func tenureLock(t *testing.T, m *fairrw.RWMutex, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := locktest.Acquire(tenureCtx(t), m, mode, true, opts...)
	if err != nil {
		t.Fatalf("%s: %v", mode, err)
	}
	return l
}

func tenureUnlock(t *testing.T, l *fairrw.Lease) {
	t.Helper()
	if err := l.Unlock(tenureCtx(t)); err != nil {
		t.Fatalf("unlock %s: %v", l.Mode(), err)
	}
}
