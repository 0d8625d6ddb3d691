package policy

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// loadDuration is how long TestLoadChecked runs per policy: 2s in CI, or
// FAIRRW_SOAK (a Go duration such as 5m) for a soak.
func loadDuration(t *testing.T) time.Duration {
	if v := os.Getenv("FAIRRW_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("FAIRRW_SOAK=%q: want a positive duration such as 5m", v)
		}
		return d
	}
	return 2 * time.Second
}

// TestLoadChecked: 200 goroutines on 4 Clients (each acquire a new owner)
// make random
// acquires (reads and writes, waiting and trying) on 100 lock names for a
// bounded time, each write incrementing a store guarded by fencing tokens.
// The recorded history must pass every checker (exclusion, fencing,
// porcupine), and the stores must lose no update. About two goroutines share a
// name at a time: porcupine's search grows with the operations in flight on
// one name (a writer-preferring read phase admits a dozen waiting readers at
// once), and a minute of search per policy is all CI can give it.
func TestLoadChecked(t *testing.T) {
	r := redistest.StartProcess(t)
	d := loadDuration(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			var clients []*fairrw.Client
			for i := range 4 {
				clients = append(clients, itest.NewClient(t, r, itest.Transports[i%len(itest.Transports)], fairrw.WithPolicy(p), fairrw.WithLeaseTime(5*time.Second)))
			}
			type guarded struct {
				store    history.Store
				accepted atomic.Int64
			}
			names := make([]string, 100)
			stores := make([]*guarded, len(names))
			for i := range names {
				names[i] = "load:" + p.String() + ":" + strconv.Itoa(i)
				stores[i] = &guarded{}
			}
			rec := history.NewRecorder()
			// No fault here: a cancelled acquire has given back what it
			// may have been granted when it returns (its attempt settled).
			rec.CancelGivesBack = true
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			var ops atomic.Int64
			var wg sync.WaitGroup
			for g := range 200 {
				c := clients[g%len(clients)]
				handles := make([]*fairrw.RWMutex, len(names))
				for i, n := range names {
					handles[i] = c.RWMutex(n)
				}
				wg.Go(func() {
					for ctx.Err() == nil {
						i := rand.IntN(len(names))
						mode := fairrw.Read
						if rand.IntN(3) == 0 {
							mode = fairrw.Write
						}
						actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
						l, err := rec.Acquire(actx, handles[i], mode, rand.IntN(4) == 0)
						acancel()
						ops.Add(1)
						if err != nil {
							continue // refused, timed out or cancelled: recorded as such
						}
						if mode == fairrw.Write && stores[i].store.Increment(l.Token()) {
							stores[i].accepted.Add(1)
						}
						time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
						_ = rec.Release(context.Background(), l)
						ops.Add(1)
					}
				})
			}
			wg.Wait()
			history.Verify(t, rec)
			var accepted int64
			for i, g := range stores {
				if err := g.store.Check(int(g.accepted.Load())); err != nil {
					t.Errorf("%s: %v", names[i], err)
				}
				accepted += g.accepted.Load()
			}
			if accepted == 0 {
				t.Fatal("no write was accepted: the load did nothing")
			}
			t.Logf("load: %d acquire and release calls by 200 workers on %d names in %v, %d guarded writes, violations: 0", ops.Load(), len(names), d, accepted)
		})
	}
}
