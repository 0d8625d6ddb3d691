package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
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
