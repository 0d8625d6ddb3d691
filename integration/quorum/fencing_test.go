package quorum

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/wire"
)

// TestQuorumReadAfterWriteKeepsItsToken: a quorum write's token is the
// highest of its nodes' tokens, which the quorum raises the others to, and
// a later read must return at least it from any majority, also one that
// shares with the write only a node that was raised. The nodes' last
// tokens are set so that node 0 mints X and node 1 X-63 (both ahead of the
// clock, as after a write whose range was left open): raised to X, node
// 1's last token is then what its own grant's range would have reached
// had the grant reserved one (wire.TokenReserve), and its release must not
// take it for that range and close it at X-63. The write is granted on
// nodes 0 and 1 (node 2 is held by another Client) and released; then the
// read is granted on nodes 1 and 2 (node 0 is held). Found by
// TestQuorumHistoryWithNodeKilled in CI: a read token 63 us below the
// write before it, node tokens that happened to be that far apart.
func TestQuorumReadAfterWriteKeepsItsToken(t *testing.T) {
	for _, p := range []fairrw.Policy{fairrw.Redisson(), fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		t.Run(p.String(), func(t *testing.T) {
			qn := itest.StartQuorumNodes(t, 3)
			ctx := itest.TestCtx(t)
			name := "quorum:fence:" + p.String()
			fence := wire.Fair(name).Fence
			raw := func(i int) rueidis.Client {
				return qn.Servers[i].Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
			}
			x := uint64(time.Now().Add(10*time.Second).UnixMicro()) + 1000
			for i, last := range map[int]uint64{0: x - 1, 1: x - 64} {
				r := raw(i)
				if err := r.Do(ctx, r.B().Set().Key(fence).Value(strconv.FormatUint(last, 10)).Px(time.Minute).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			// hold takes the write of name on node i alone, with a Client of
			// its own.
			hold := func(i int) *fairrw.Lease {
				c := itest.NewClient(t, qn.Servers[i], itest.Transports[0], fairrw.WithPolicy(p))
				l, err := c.RWMutex(name).Lock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			q := qn.Quorum(t, itest.Transports[0], nil, fairrw.WithPolicy(p))
			m := q.RWMutex(name)

			other := hold(2)
			w, err := m.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wtoken := w.Token()
			if wtoken != x {
				t.Fatalf("write token %d, want node 0's %d", wtoken, x)
			}
			// A write of another Client waits on node 1, so that the release
			// there is the full one, which closes ranges (an idle lock's
			// takes the fast path, which leaves the last token alone); its
			// grant mints the next token there. (The Redisson formats queue
			// no one, and close no range.)
			c1 := itest.NewClient(t, qn.Servers[1], itest.Transports[0], fairrw.WithPolicy(p))
			var waiter <-chan error
			if p.String() == fairrw.Redisson().String() {
				done := make(chan error, 1)
				done <- nil
				waiter = done
			} else {
				waiter = itest.LockThenUnlock(ctx, c1.RWMutex(name))
				itest.AwaitWaitingWriters(t, ctx, c1, name, 1)
			}
			if err := w.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-waiter; err != nil {
				t.Fatal(err)
			}
			if err := other.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			other = hold(0)
			r, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.Token() < wtoken {
				t.Errorf("read token %d below the write token %d granted before it (%s)", r.Token(), wtoken, fmt.Sprint(int64(wtoken)-int64(r.Token()))+" us")
			}
			if err := r.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := other.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
