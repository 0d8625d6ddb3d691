package locktest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// CancelStormLeavesNothing: many acquires whose ctx ends at random moments,
// some in the middle of an attempt (its outcome then unknown to the caller),
// on a free and on a held lock. Whatever each returned, once the granted
// leases are unlocked nothing is held and nothing but short-lived
// tombstones is left.
func CancelStormLeavesNothing(t *testing.T, env Env) {
	c := env.client(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []*fairrw.Lease
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%8)*150*time.Microsecond)
			defer cancel()
			mode := fairrw.Write
			if i%3 == 0 {
				mode = fairrw.Read
			}
			l, err := Acquire(cctx, c.RWMutex(name(t)), mode, true)
			switch {
			case err == nil:
				mu.Lock()
				got = append(got, l)
				mu.Unlock()
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("acquire: %v, want a grant or DeadlineExceeded", err)
			}
		}()
	}
	wg.Wait()
	for _, l := range got {
		unlock(t, l)
	}
	// Nothing held: a fresh owner gets the write at once.
	unlock(t, granted(t, c.RWMutex(name(t)), fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}

// UnlockIgnoresCancelledContext: Unlock runs detached from the caller's
// cancellation, so a request that was cancelled still releases its lock.
func UnlockIgnoresCancelledContext(t *testing.T, env Env) {
	c := env.client(t)
	l := lock(t, c.RWMutex(name(t)), fairrw.Write)
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Unlock(cctx); err != nil {
		t.Fatalf("Unlock with a cancelled ctx: %v", err)
	}
	unlock(t, granted(t, c.RWMutex(name(t)), fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}
