package integration

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/redistest"
)

// TestFaultRestartWithoutPersistence: Redis restarts and loses everything
// (SHUTDOWN NOSAVE). Holders learn it by their next renewal (Done closes
// with ErrLeaseLost), and new acquires work at once. Redis cannot keep its
// promise of exclusion here: a new holder may be granted while the old one
// still believes it holds. Fencing catches it: tokens come from the server's
// clock, so the new holder's token is still above the old one's although
// the last token was lost with everything else, and a store that keeps the
// highest token refuses the old holder's late writes.
func TestFaultRestartWithoutPersistence(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			const lease = 600 * time.Millisecond
			name := "fault:restart:" + p.String()
			c := newClient(t, r, transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
			var store history.Store
			var old *fairrw.Lease
			for range 3 { // a few grants, each token above the one before
				if old != nil {
					mustUnlock(t, old)
				}
				old = mustLock(t, c.RWMutex(name), fairrw.Write)
				if !store.Increment(old.Token()) {
					t.Fatalf("store refused token %d", old.Token())
				}
			}
			r.Restart(t)
			other := newClient(t, r, transports[0], fairrw.WithPolicy(p))
			l := mustLock(t, other.RWMutex(name), fairrw.Write)
			select {
			case <-old.Done():
				t.Logf("the old holder learnt its loss before the new grant")
			default:
				t.Logf("new grant (token %d) while the old holder (token %d) still believes it holds: Redis lost the lock", l.Token(), old.Token())
			}
			if l.Token() <= old.Token() {
				t.Fatalf("after a restart without persistence token %d after %d: want tokens to go on increasing", l.Token(), old.Token())
			}
			if !store.Increment(l.Token()) {
				t.Fatalf("the store refused the new holder's token %d after %d", l.Token(), old.Token())
			}
			if store.Increment(old.Token()) {
				t.Fatalf("the store accepted the old holder's token %d after %d", old.Token(), l.Token())
			}
			awaitLost(t, old, 5*lease)
			// The old holder's Client, whose scripts Redis forgot, works on.
			mustUnlock(t, l)
			mustUnlock(t, mustLock(t, c.RWMutex(name), fairrw.Write))
		})
	}
}

// awaitLost waits at most within for l to end, and fails t unless it ended
// lost (ErrLeaseLost).
func awaitLost(t *testing.T, l *fairrw.Lease, within time.Duration) {
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

// TestFaultScriptFlush: SCRIPT FLUSH every 20ms under a lock workload of
// every policy: no call fails (NOSCRIPT is answered by EVAL), and holds
// stay exclusive.
func TestFaultScriptFlush(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			stop := make(chan struct{})
			var flushes atomic.Int64
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
						if raw.Do(context.Background(), raw.B().ScriptFlush().Build()).Error() == nil {
							flushes.Add(1)
						}
					}
				}
			}()
			defer close(stop)
			x := runExclusive(t, ctx, []*fairrw.Client{
				newClient(t, r, transports[0], fairrw.WithPolicy(p)),
				newClient(t, r, transports[1], fairrw.WithPolicy(p)),
			}, "fault:flush:"+p.String(), 6)
			if x.grants < 20 || flushes.Load() < 5 {
				t.Fatalf("%d grants and %d flushes: too few to mean anything", x.grants, flushes.Load())
			}
			t.Logf("%d grants (%d writes, %d ops checked) across %d SCRIPT FLUSH, no error, violations: 0", x.grants, x.writes, x.ops, flushes.Load())
		})
	}
}

// exclusive is what runExclusive saw.
type exclusive struct{ grants, writes, ops int64 }

// runExclusive has workers (spread over clients) lock name for reading or
// writing until ctx ends, holding each grant for a moment, every write
// incrementing a store guarded by its fencing token. It fails t on any
// error other than ctx's end, and unless the recorded history passes every
// checker (exclusion, fencing, porcupine) and the store lost no update.
func runExclusive(t *testing.T, ctx context.Context, clients []*fairrw.Client, name string, workers int) exclusive {
	t.Helper()
	return runLoad(t, ctx, load{clients: clients, names: []string{name}, workers: workers})
}

// load is a checked workload: workers spread over clients, each on one of
// names in turn.
type load struct {
	clients []*fairrw.Client
	names   []string
	workers int
	// failover accepts what a primary's death may cause: an Unlock that
	// fails and leaves its lease lost (the hold ran out while no one
	// answered, or the unlock timeout passed first), and ErrNotReplicated
	// from Lock (the promoted replica has no replica of its own yet). The
	// history checkers still judge every hold.
	failover bool
}

// runLoad runs ld until ctx ends (see runExclusive), with one fenced store
// per name.
func runLoad(t *testing.T, ctx context.Context, ld load) exclusive {
	t.Helper()
	rec := history.NewRecorder()
	stores := make([]history.Store, len(ld.names))
	accepted := make([]atomic.Int64, len(ld.names))
	var grants, writes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, ld.workers)
	for i := range ld.workers {
		k := i % len(ld.names)
		m := ld.clients[i%len(ld.clients)].RWMutex(ld.names[k])
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				mode := fairrw.Read
				if (i+n)%3 == 0 {
					mode = fairrw.Write
				}
				l, err := rec.Acquire(ctx, m, mode, false)
				if ld.failover && errors.Is(err, fairrw.ErrNotReplicated) {
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
				if err := rec.Release(context.Background(), l); err != nil && !(ld.failover && errors.Is(l.Err(), fairrw.ErrLeaseLost)) {
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
			t.Errorf("guarded store of %s: %v", ld.names[k], err)
		}
	}
	return exclusive{grants.Load(), writes.Load(), int64(len(rec.Ops()))}
}
