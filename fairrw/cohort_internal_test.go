package fairrw

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestCohortForgottenWhenIdle: a cohort is kept only while a Lock is in it
// or a Lease of it holds; after a busy run, with cancellations among the
// waiters, the Client keeps no cohort, and the name is free.
func TestCohortForgottenWhenIdle(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	c, err := New(WithClientOption(opt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.RWMutex("idle-cohort")
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 30 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if (g+i)%7 == 0 {
					cancel() // some waiters give up at once
				}
				l, err := m.Lock(ctx)
				if err == nil {
					if err := l.Unlock(context.Background()); err != nil {
						t.Errorf("Unlock: %v", err)
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.cohorts.mu.Lock()
		n := len(c.cohorts.m)
		c.cohorts.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d cohorts kept after every Lock returned and every Lease ended", n)
		}
		time.Sleep(10 * time.Millisecond) // a declined pass unlocks in the background
	}
	l, err := m.TryLock(context.Background())
	if err != nil {
		t.Fatalf("the name is not free after the run: %v", err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}
