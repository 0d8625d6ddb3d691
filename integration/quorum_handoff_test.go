package integration

import (
	"context"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// quorumHandoffBound is how soon after a release a waiting quorum acquire
// must be granted: a wake-up (pub/sub or invalidation) and one round, far
// below the retry bound of a third of the lease that a waiter falls back
// on when it hears nothing.
const quorumHandoffBound = 300 * time.Millisecond

// TestQuorumHandoff: a quorum Lock or RLock waiting behind another
// process's hold is granted soon after that hold's Unlock, under every
// policy: some node's release wakes it. The lease is long (3s) so that a
// waiter that hears nothing, and comes back only at its retry bound
// (lease/3), misses the bound.
func TestQuorumHandoff(t *testing.T) {
	qn := startQuorumNodes(t, 3)
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			opts := []fairrw.Option{fairrw.WithPolicy(p), fairrw.WithLeaseTime(3 * time.Second)}
			qopts := []fairrw.QuorumOption{fairrw.WithNodeTimeout(200 * time.Millisecond)}
			a := qn.quorum(t, transports[0], qopts, opts...)
			b := qn.quorum(t, transports[0], qopts, opts...)
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
					ctx := testCtx(t)
					h, _, err := quorumLock(ctx, a.RWMutex(name), tc.held)
					if err != nil {
						t.Fatal(err)
					}
					got := make(chan *fairrw.QuorumLease, 1)
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
					if handoff > quorumHandoffBound {
						t.Errorf("%s waiter granted %v after the %s's Unlock call, want under %v: no release woke it",
							tc.waiter, handoff.Round(time.Millisecond), tc.held, quorumHandoffBound)
					} else {
						t.Logf("%s waiter granted %v after the %s's Unlock call", tc.waiter, handoff.Round(time.Millisecond), tc.held)
					}
				})
			}
		})
	}
}
