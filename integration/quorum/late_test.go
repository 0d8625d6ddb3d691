package quorum

import (
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
)

// TestQuorumLateGrants: one handle alternates RLock, Unlock, Lock, Unlock
// for a while with node timeouts about one round trip on loopback, so that
// many rounds are decided before some node's grant comes in (it is then
// given back in the background). A late grant is no hold of the caller's: Lock
// and RLock must neither fail because of one (each acquire is a new owner
// on every node: a late read grant of an earlier one is another owner's, and
// only delays the write until it is given back) nor return a lease that
// misses a majority.
func TestQuorumLateGrants(t *testing.T) {
	qn := itest.StartQuorumNodes(t, 3)
	for _, nodeTimeout := range []time.Duration{300 * time.Microsecond, 600 * time.Microsecond, 1200 * time.Microsecond} {
		t.Run(fmt.Sprintf("node-timeout=%v", nodeTimeout), func(t *testing.T) {
			q := qn.Quorum(t, itest.Transports[0], []fairrw.QuorumOption{fairrw.WithNodeTimeout(nodeTimeout)},
				fairrw.WithPolicy(fairrw.Redisson()), fairrw.WithLeaseTime(5*time.Second))
			ctx := itest.TestCtx(t)
			m := q.RWMutex("quorum:late")
			var errs callErrors
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
				for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
					l, _, err := quorumLock(ctx, m, mode)
					if err != nil {
						errs.add(fmt.Sprintf("%s: %v", mode, err))
						continue
					}
					if hidden.LeaseNodes(l) < hidden.Majority(q) {
						t.Errorf("%s lease held on %d nodes, majority %d", mode, hidden.LeaseNodes(l), hidden.Majority(q))
					}
					if err := l.Unlock(ctx); err != nil {
						t.Errorf("Unlock of %s: %v", mode, err)
					}
				}
			}
			errs.report(t)
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			qn.ExpectNoLockKeys(t, 0, 1, 2)
		})
	}
}
