package cohort

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestShutdownMidCohortRun: Shutdown while a Client's cohort passes the
// write among 6 goroutines (holds of 0-2ms), 3 of its goroutines read
// (sharing, and under PhaseFair ending the runs), and a writer of another
// Client waits: Shutdown returns nil, every call of the Client returns
// (granted before, or ErrClosed), every Lease it granted ends, the other
// Client's writer is granted at once (the run's successor, queued in Redis
// by a release, is given back, not left to block it), and nothing of the
// name is left but what expires by itself. 5 times per policy, Shutdown at
// a random point of the run.
func TestShutdownMidCohortRun(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			for round := range 5 {
				name := "shutdown-midrun:" + p.String()
				c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
				m := c.RWMutex(name)
				var (
					mu     sync.Mutex
					leases []*fairrw.Lease
					wg     sync.WaitGroup
					errs   = make(chan error, 9)
				)
				for g := range 9 {
					wg.Go(func() {
						for {
							var l *fairrw.Lease
							var err error
							if g < 6 {
								l, err = m.Lock(ctx)
							} else {
								l, err = m.RLock(ctx)
							}
							if err != nil {
								if !errors.Is(err, fairrw.ErrClosed) {
									errs <- err
								}
								return
							}
							mu.Lock()
							leases = append(leases, l)
							mu.Unlock()
							time.Sleep(time.Duration(g%3) * time.Millisecond)
							if err := l.Unlock(ctx); err != nil && !errors.Is(err, fairrw.ErrClosed) && !errors.Is(err, fairrw.ErrNotHeld) {
								errs <- err
								return
							}
						}
					})
				}
				time.Sleep(time.Duration(20+round*15) * time.Millisecond)
				w := itest.AdvLock(ctx, other.RWMutex(name))
				time.Sleep(10 * time.Millisecond)
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if err := c.Shutdown(sctx); err != nil {
					t.Errorf("round %d: Shutdown: %v", round, err)
				}
				cancel()
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Errorf("round %d: a call of the shut-down Client: %v", round, err)
				}
				mu.Lock()
				for i, l := range leases {
					select {
					case <-l.Done():
					default:
						t.Errorf("round %d: lease %d still alive after Shutdown", round, i)
					}
				}
				n := len(leases)
				mu.Unlock()
				res := itest.AdvRecv(t, w, 5*time.Second, "the other Client's writer after Shutdown")
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if err := res.L.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				t.Logf("round %d: %d leases granted before Shutdown", round, n)
				itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
			}
		})
	}
}
