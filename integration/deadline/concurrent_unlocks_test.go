package deadline

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestConcurrentUnlocksFrozen: one owner's many leases (reentrant
// reads, WithLease, the write) unlocked concurrently with short ctx
// deadlines while Redis is frozen, with a further hold and a Shutdown
// racing them: every call returns by its ctx's deadline.
func TestConcurrentUnlocksFrozen(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair(), fairrw.Redisson()} {
		t.Run(p.String(), func(t *testing.T) {
			ctl := lateness.Start(t)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(2*time.Second))
			name := "concurrent-unlocks-cu-" + p.String()
			w := itest.MustLock(t, c.RWMutex(name), fairrw.Write)
			leases := []*fairrw.Lease{w}
			for i := 0; i < 12; i++ {
				var opts []fairrw.AcquireOption
				if i%2 == 0 {
					opts = append(opts, fairrw.WithLease(time.Duration(1+i)*time.Second+time.Microsecond*333))
				}
				mode := fairrw.Read
				if i%3 == 0 {
					mode = fairrw.Write
				}
				leases = append(leases, itest.MustFurther(t, w, mode, opts...))
			}
			r.Pause(t)
			defer r.Resume(t)
			var wg sync.WaitGroup
			check := func(what string, d time.Duration, f func(ctx context.Context) error) {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				start := time.Now()
				err := f(ctx)
				ctl.Within(fmt.Sprintf("%s after its ctx's deadline (%v, %v)", what, d, err), time.Since(start)-d, 100*time.Millisecond)
			}
			for i, l := range leases {
				wg.Add(1)
				go check("Unlock", time.Duration(20+10*i)*time.Millisecond, l.Unlock)
			}
			wg.Add(3)
			go check("further RLock", 150*time.Millisecond, func(ctx context.Context) error { _, err := w.RLock(ctx); return err })
			go check("TryLock", 150*time.Millisecond, func(ctx context.Context) error { _, err := c.RWMutex(name).TryLock(ctx); return err })
			go func() { time.Sleep(50 * time.Millisecond); check("Shutdown", 300*time.Millisecond, c.Shutdown) }()
			wg.Wait()
		})
	}
}
