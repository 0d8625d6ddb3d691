package itest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/internal/hidden"
)

// awaitLost waits at most within for l to end, and fails t unless it ended
// lost (ErrLeaseLost).
func AwaitLost(t *testing.T, l *fairrw.Lease, within time.Duration) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(within):
		t.Fatalf("lease %q not reported lost within %v", hidden.Name(l), within)
	}
	if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
		t.Fatalf("lease %q ended with %v, want ErrLeaseLost", hidden.Name(l), l.Err())
	}
}

// exclusive is what runExclusive saw.
type Exclusive struct{ Grants, Writes, Ops int64 }

// load is a checked workload: workers spread over clients, each on one of
// names in turn.
type Load struct {
	Clients []*fairrw.Client
	Names   []string
	Workers int
	// failover accepts what a primary's death may cause: an Unlock that
	// fails and leaves its lease lost (the hold ran out while no one
	// answered, or the unlock timeout passed first), and ErrNotReplicated
	// from Lock (the promoted replica has no replica of its own yet). The
	// history checkers still judge every hold.
	Failover bool
}

// runLoad runs ld until ctx ends (see runExclusive), with one fenced store
// per name.
func RunLoad(t *testing.T, ctx context.Context, ld Load) Exclusive {
	t.Helper()
	rec := history.NewRecorder()
	stores := make([]history.Store, len(ld.Names))
	accepted := make([]atomic.Int64, len(ld.Names))
	var grants, writes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, ld.Workers)
	for i := range ld.Workers {
		k := i % len(ld.Names)
		m := ld.Clients[i%len(ld.Clients)].RWMutex(ld.Names[k])
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				mode := fairrw.Read
				if (i+n)%3 == 0 {
					mode = fairrw.Write
				}
				l, err := rec.Acquire(ctx, m, mode, false)
				if ld.Failover && (errors.Is(err, fairrw.ErrNotReplicated) || errors.Is(err, fairrw.ErrUnavailable)) {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				grants.Add(1)
				if mode == fairrw.Write {
					writes.Add(1)
					if stores[k].Increment(l.Token()) {
						accepted[k].Add(1)
					}
				}
				time.Sleep(time.Millisecond)
				if err := rec.Release(context.Background(), l); err != nil && !(ld.Failover && errors.Is(l.Err(), fairrw.ErrLeaseLost)) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("lock call failed: %v", err)
	}
	history.Verify(t, rec)
	for k := range stores {
		if err := stores[k].Check(int(accepted[k].Load())); err != nil {
			t.Errorf("guarded store of %s: %v", ld.Names[k], err)
		}
	}
	return Exclusive{grants.Load(), writes.Load(), int64(len(rec.Ops()))}
}
