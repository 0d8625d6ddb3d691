package behaviour

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestUnlockWithCancelledCtx: the deferred Unlock of a request whose ctx
// was cancelled (the commonest way to call it) still releases the hold:
// on a Redis that answers it is confirmed within the grace and returns
// nil, or else returns the ctx's error while the release goes on; either
// way the lock is free for another owner at once, and an outer reentrant
// hold of the same owner keeps the lock until it is unlocked too.
func TestUnlockWithCancelledCtx(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "unlock-cancelled:" + p.String()
			for i := 0; i < 20; i++ {
				req, cancel := context.WithCancel(context.Background())
				outer, err := c.RWMutex(name).Lock(req)
				if err != nil {
					t.Fatal(err)
				}
				inner, err := outer.Lock(req, fairrw.WithLease(2*time.Second+time.Duration(i)*time.Microsecond))
				if err != nil {
					t.Fatal(err)
				}
				cancel() // the request ends; its deferred Unlocks run with its ctx
				for _, l := range []*fairrw.Lease{inner, outer} {
					if err := l.Unlock(req); err != nil && !errors.Is(err, context.Canceled) {
						t.Fatalf("round %d: Unlock with a cancelled ctx: %v", i, err)
					} else if err == nil && l.Err() != nil {
						t.Fatalf("round %d: Unlock returned nil but the lease ended with %v", i, l.Err())
					}
					if l == inner {
						if _, err := other.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
							t.Fatalf("round %d: after the inner hold's Unlock, the outer hold no longer keeps others out: %v", i, err)
						}
					}
				}
				next, err := other.RWMutex(name).Lock(itest.CtxFor(t, time.Second))
				if err != nil {
					t.Fatalf("round %d: the lock is not free after both Unlocks: %v", i, err)
				}
				itest.MustUnlock(t, next)
			}
		})
	}
}
