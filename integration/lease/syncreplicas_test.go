package lease

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestSyncReplicasWithoutReplicas: on a primary with no replica, a grant
// can never be acknowledged: every acquire under WithSyncReplicas fails with
// ErrNotReplicated after the timeout, and gives its grant back, so another
// owner can take the lock at once and no key is left behind.
func TestSyncReplicasWithoutReplicas(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			const timeout = 50 * time.Millisecond
			synced := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, timeout))
			plain := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "sync-replicas:" + p.String()
			ctx := itest.TestCtx(t)
			for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
				start := time.Now()
				var err error
				if mode == fairrw.Write {
					_, err = synced.RWMutex(name).Lock(ctx)
				} else {
					_, err = synced.RWMutex(name).RLock(ctx)
				}
				if !errors.Is(err, fairrw.ErrNotReplicated) {
					t.Fatalf("%s under WithSyncReplicas(1) with no replica: %v, want ErrNotReplicated", mode, err)
				}
				if el := time.Since(start); el < timeout {
					t.Fatalf("%s failed after %v, before WAIT's %v timeout", mode, el, timeout)
				}
				// The grant was given back: another owner gets the write.
				l, err := plain.RWMutex(name).TryLock(ctx)
				if err != nil {
					t.Fatalf("after a failed synced %s, TryLock: %v", mode, err)
				}
				itest.MustUnlock(t, l)
			}
			locktest.EventuallyNoKeys(t, itest.NewEnv(t, r, itest.Transports[0], p), name)
		})
	}
}

// TestSyncReplicasFurtherHoldGivenBack: a further hold (a reentrant write,
// a downgrade) that too few replicas acknowledged is given back, as a first
// hold is: Redis granted it, but no Lease stands for it, so Redis must keep
// no more of the owner than its Leases hold. Left to expire, the owner's
// only Lease frees the name at its deadline, not at the deadline of the
// refused hold's longer lease, which would hold the name with no Lease
// live and every waiter ungranted.
func TestSyncReplicasFurtherHoldGivenBack(t *testing.T) {
	primary := redistest.StartProcess(t)
	host, port, _ := strings.Cut(primary.Addr, ":")
	replica := redistest.StartProcess(t, "--replicaof", host, port)
	raw := itest.FRaw(t, primary)
	waitReplicas(t, raw, 1)
	const (
		top     = time.Second     // the owner's Lease, left to expire
		refused = 6 * time.Second // the further hold's lease
		slack   = 1500 * time.Millisecond
	)
	for _, p := range itest.Policies {
		for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(fmt.Sprintf("%s/further=%s", p, mode), func(t *testing.T) {
				name := fmt.Sprintf("sync-further:%s:%s", p, mode)
				synced := itest.NewClient(t, primary, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, 100*time.Millisecond))
				plain := itest.NewClient(t, primary, itest.Transports[0], fairrw.WithPolicy(p))
				ctl := lateness.Start(t)
				// Granted while the replica acknowledges (a replica that a
				// loaded machine ran late may miss the 100 ms: again); then
				// the replica stops.
				var l *fairrw.Lease
				for try := 1; l == nil; try++ {
					var err error
					l, err = synced.RWMutex(name).Lock(itest.TestCtx(t), fairrw.WithLease(top))
					if err != nil && (!errors.Is(err, fairrw.ErrNotReplicated) || try == 20) {
						t.Fatalf("Lock with the replica up, try %d: %v", try, err)
					}
				}
				replica.Pause(t)
				var err error
				if mode == fairrw.Write {
					_, err = l.Lock(itest.TestCtx(t), fairrw.WithLease(refused))
				} else {
					_, err = l.RLock(itest.TestCtx(t), fairrw.WithLease(refused))
				}
				replica.Resume(t)
				if !errors.Is(err, fairrw.ErrNotReplicated) {
					t.Fatalf("a further %s with the replica cut off: %v, want ErrNotReplicated", mode, err)
				}
				// l is left to expire: the name is free at its deadline.
				ctx := itest.CtxFor(t, refused)
				got, err := plain.RWMutex(name).Lock(ctx)
				if err != nil {
					t.Fatalf("another Client's Lock, with the synced owner's only Lease left to expire at %s: %v (%s after it)",
						l.Deadline().Format("15:04:05.000"), err, time.Since(l.Deadline()).Round(time.Millisecond))
				}
				// Within slack of the Lease's deadline, plus what the
				// machine added to a wait meanwhile (the control's worst).
				ctl.Within("another Client's Lock after the synced owner's only Lease expired (Redis kept the refused further hold?)", time.Since(l.Deadline()), slack)
				itest.MustUnlock(t, got)
				itest.EventuallyNoLockKeys(t, raw, name)
			})
		}
	}
}
