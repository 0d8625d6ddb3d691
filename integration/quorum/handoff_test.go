package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
)

// TestQuorumHandoff: a quorum Lock or RLock waiting behind another
// process's hold is granted soon after that hold's Unlock, under every
// policy: some node's release wakes it (pub/sub or invalidation), not its
// retry bound (a third of the lease).
func TestQuorumHandoff(t *testing.T) {
	qn := itest.StartQuorumNodes(t, 3)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			opts := []fairrw.Option{fairrw.WithPolicy(p), fairrw.WithLeaseTime(3 * time.Second)}
			qopts := []fairrw.QuorumOption{fairrw.WithNodeTimeout(200 * time.Millisecond)}
			a := qn.Quorum(t, itest.Transports[0], qopts, opts...)
			b := qn.Quorum(t, itest.Transports[0], qopts, opts...)
			for _, tc := range []struct {
				name         string
				held, waiter fairrw.Mode
			}{
				{"write-to-write", fairrw.Write, fairrw.Write},
				{"read-to-write", fairrw.Read, fairrw.Write},
				{"write-to-read", fairrw.Write, fairrw.Read},
			} {
				t.Run(tc.name, func(t *testing.T) {
					name := "quorum:handoff:" + p.String() + ":" + tc.name
					ctx := itest.TestCtx(t)
					h, _, err := quorumLock(ctx, a.RWMutex(name), tc.held)
					if err != nil {
						t.Fatal(err)
					}
					got := make(chan *fairrw.Lease, 1)
					go func() {
						l, _, err := quorumLock(ctx, b.RWMutex(name), tc.waiter)
						if err != nil {
							t.Error(err)
						}
						got <- l
					}()
					time.Sleep(300 * time.Millisecond) // the waiter has made its rounds and sleeps
					unlocked := time.Now()
					if err := h.Unlock(context.Background()); err != nil {
						t.Fatal(err)
					}
					l := <-got
					if l == nil {
						t.FailNow()
					}
					handoff := time.Since(unlocked)
					if err := l.Unlock(context.Background()); err != nil {
						t.Fatal(err)
					}
					if w := hidden.WokenBy(l); w != "pubsub" && w != "invalidation" {
						t.Errorf("%s waiter granted %v after the %s's Unlock call, woken by %q: no release woke it",
							tc.waiter, handoff.Round(time.Millisecond), tc.held, w)
					} else {
						t.Logf("%s waiter granted %v after the %s's Unlock call, woken by %s", tc.waiter, handoff.Round(time.Millisecond), tc.held, w)
					}
				})
			}
		})
	}
}
