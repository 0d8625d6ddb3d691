package sentinel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/faults"
)

// TestFaultFailover: the primary dies and its replica is promoted.
//
// Redis replicates asynchronously, so a grant the replica had not received
// is lost: another owner is granted the lock on the new primary while the
// first still believes it holds it (the test shows it happen). Tokens come
// from the server's clock, so the new holder's is still above the lost
// grant's, and a store that keeps the highest token refuses the first
// holder's late writes: fencing catches what Redis lost.
//
// With WithSyncReplicas(1, ...), a grant is only returned once the replica
// has it: it survives the failover, and while the replica cannot
// acknowledge, Lock fails with ErrNotReplicated instead of granting what a
// failover would lose.
func TestFaultFailover(t *testing.T) {
	for _, p := range itest.Policies {
		t.Run(p.String()+"/async", func(t *testing.T) {
			pair := faults.StartPair(t)
			name := "fault:failover:" + p.String()
			a := itest.NewClient(t, pair.Primary, itest.Transports[0], fairrw.WithPolicy(p))
			var store history.Store
			itest.MustUnlock(t, itest.MustLock(t, a.RWMutex(name), fairrw.Write)) // replicated
			syncPair(t, pair)
			// A partition cuts the replica off and it is promoted (a pause
			// would not do: the kernel would still buffer the stream for it);
			// the old primary goes on granting until it dies.
			promote(t, pair)
			itest.MustUnlock(t, itest.MustLock(t, a.RWMutex(name), fairrw.Write))
			held := itest.MustLock(t, a.RWMutex(name), fairrw.Write) // never replicated
			if !store.Increment(held.Token()) {
				t.Fatal("store refused the first holder")
			}
			pair.Primary.Kill(t)

			b := itest.NewClient(t, pair.Replica, itest.Transports[0], fairrw.WithPolicy(p))
			l := itest.MustLock(t, b.RWMutex(name), fairrw.Write)
			defer itest.MustUnlock(t, l)
			select {
			case <-held.Done():
				t.Fatalf("the first holder's 30s lease ended already: %v", held.Err())
			default: // both believe they hold the write: Redis lost the grant
			}
			if l.Token() <= held.Token() {
				t.Fatalf("new primary's token %d not above the lost grant's %d: tokens must go on increasing across a failover", l.Token(), held.Token())
			}
			if !store.Increment(l.Token()) {
				t.Fatalf("store refused the new holder's token %d after %d", l.Token(), held.Token())
			}
			if store.Increment(held.Token()) {
				t.Fatalf("store accepted the lost grant's token %d after %d: fencing did not catch it", held.Token(), l.Token())
			}
			t.Logf("after the failover two owners believe they hold the write (tokens %d and %d); the store refused the lower", held.Token(), l.Token())
		})

		t.Run(p.String()+"/wait", func(t *testing.T) {
			pair := faults.StartPair(t)
			name := "fault:failover-wait:" + p.String()
			a := itest.NewClient(t, pair.Primary, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, 2*time.Second))
			held := itest.MustLock(t, a.RWMutex(name), fairrw.Write)

			// While the replica cannot acknowledge, no grant is returned.
			pair.Replica.Pause(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := a.RWMutex(name + ":other").Lock(ctx); !errors.Is(err, fairrw.ErrNotReplicated) {
				t.Fatalf("Lock with the replica frozen: %v, want ErrNotReplicated", err)
			}
			pair.Replica.Resume(t)
			// The refused grant is given back at once, or, when the primary
			// does not answer within the library's grace (a loaded machine),
			// in the background: the test fails over only once the primary
			// shows the name free and the replica has all the primary
			// wrote, so that what it checks on the replica is the give-back,
			// not a race between it and kill -9.
			for {
				info, err := a.Inspect(ctx, name+":other")
				if err != nil {
					t.Fatalf("Inspect on the primary: %v", err)
				}
				if len(info.Holders) == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			syncPair(t, pair)
			failOver(t, pair)

			// The acknowledged grant survived the failover.
			b := itest.NewClient(t, pair.Replica, itest.Transports[0], fairrw.WithPolicy(p))
			if _, err := b.RWMutex(name).TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryLock on the promoted replica: %v, want ErrNotAcquired (the synced grant must survive)", err)
			}
			// The refused grant left nothing: its name is free.
			l, err := b.RWMutex(name + ":other").TryLock(ctx)
			if err != nil {
				t.Fatalf("TryLock of the name whose grant was refused: %v", err)
			}
			itest.MustUnlock(t, l)
			_ = held
		})
	}
}

// syncPair waits until the replica has everything the primary wrote.
func syncPair(t *testing.T, pair *faults.Pair) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pair.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
}

// failOver kills the primary (kill -9), continues the replica if it was
// frozen, and promotes it.
func failOver(t *testing.T, pair *faults.Pair) {
	t.Helper()
	pair.Primary.Kill(t)
	pair.Replica.Resume(t)
	promote(t, pair)
}

func promote(t *testing.T, pair *faults.Pair) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pair.Promote(ctx); err != nil {
		t.Fatalf("promote: %v", err)
	}
}
