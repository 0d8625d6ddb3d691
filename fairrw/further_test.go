package fairrw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestFurtherHoldAfterForceUnlock: a Lease whose hold was force-unlocked is
// still alive locally until its next renewal; a further hold taken from it
// then must not recreate the owner's hold in Redis (the scripts refuse a
// further hold of an owner that holds nothing): it fails with ErrNotHeld
// and the lock stays free for another owner.
func TestFurtherHoldAfterForceUnlock(t *testing.T) {
	for _, p := range locktest.Policies() {
		for _, mutex := range []bool{false, true} {
			label := p.String()
			if mutex {
				label += "/mutex"
			}
			t.Run(label, func(t *testing.T) {
				_, opt := redistest.Miniredis(t)
				c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithPolicy(p))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var l *fairrw.Lease
				force := func() error { return c.RWMutex("forced").ForceUnlock(ctx, fairrw.Write) }
				other := func() (*fairrw.Lease, error) { return c.RWMutex("forced").TryLock(ctx) }
				if mutex {
					l, err = c.Mutex("forced").Lock(ctx)
					force = func() error { return c.Mutex("forced").ForceUnlock(ctx) }
					other = func() (*fairrw.Lease, error) { return c.Mutex("forced").TryLock(ctx) }
				} else {
					l, err = c.RWMutex("forced").Lock(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := force(); err != nil {
					t.Fatalf("ForceUnlock: %v", err)
				}
				if _, err := l.Lock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
					t.Fatalf("further write after ForceUnlock: %v, want ErrNotHeld", err)
				}
				o, err := other()
				if err != nil {
					t.Fatalf("another owner after the refused further hold: %v", err)
				}
				if err := o.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
