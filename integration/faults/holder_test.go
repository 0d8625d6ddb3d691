package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/holder"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestFaultHolderKilled: a process holding the write is killed (kill -9: no
// unlock, no message). The lock frees within the lease, and a waiter in
// another process gets it without any notification (it wakes by the PTTL
// bound, or an expiry invalidation), with a greater fencing token.
func TestFaultHolderKilled(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, p := range itest.Policies {
		for _, tr := range itest.Transports {
			t.Run(p.String()+"/"+tr.Name, func(t *testing.T) {
				ctl := lateness.Start(t)
				name := "fault:killed:" + p.String() + ":" + tr.Name
				child := holder.Start(t, holder.Spec{Addr: r.Addr, Policy: p.String(), Name: name, Write: true, Lease: itest.HolderLease})
				waiter := itest.NewClient(t, r, tr, fairrw.WithPolicy(p)).RWMutex(name)
				got := make(chan itest.LockResult, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*itest.HolderLease)
					defer cancel()
					l, err := waiter.Lock(ctx)
					got <- itest.LockResult{L: l, Err: err, At: time.Now()}
				}()
				time.Sleep(50 * time.Millisecond) // the waiter is queued
				killed := time.Now()
				child.Kill()
				res := <-got
				if res.Err != nil {
					t.Fatalf("waiter after the holder was killed: %v", res.Err)
				}
				defer itest.MustUnlock(t, res.L)
				ctl.Within(fmt.Sprintf("waiter granted after the kill (the %v lease +1s)", itest.HolderLease), res.At.Sub(killed), itest.HolderLease+time.Second)
				if res.L.Token() <= child.Token {
					t.Fatalf("waiter's token %d not above the dead holder's %d", res.L.Token(), child.Token)
				}
			})
		}
	}
}

// TestFaultHolderPaused: a holder frozen (SIGSTOP) past its lease stops
// renewing; the lock frees within the lease and another owner takes it,
// with a greater token. When the frozen holder wakes and writes with its
// old token, a store that keeps the highest token refuses the late write.
func TestFaultHolderPaused(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			ctl := lateness.Start(t)
			name := "fault:paused:" + p.String()
			child := holder.Start(t, holder.Spec{Addr: r.Addr, Policy: p.String(), Name: name, Write: true, Lease: itest.HolderLease})
			var store history.Store
			if !store.Increment(child.Token) {
				t.Fatal("the store refused the first holder's token")
			}
			child.Pause()
			defer child.Resume()
			paused := time.Now()
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			ctx, cancel := context.WithTimeout(context.Background(), 10*itest.HolderLease)
			defer cancel()
			l, err := c.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatalf("lock after the holder froze: %v", err)
			}
			defer itest.MustUnlock(t, l)
			ctl.Within(fmt.Sprintf("lock freed after the holder froze (its %v lease +1s)", itest.HolderLease), time.Since(paused), itest.HolderLease+time.Second)
			if !store.Increment(l.Token()) {
				t.Fatalf("the store refused the new holder's token %d (old %d)", l.Token(), child.Token)
			}
			child.Resume()
			// The woken holder still believes it holds the lock; its write
			// carries its old token and must be refused.
			if store.Increment(child.Token) {
				t.Fatalf("a late write with the stale token %d was accepted after token %d", child.Token, l.Token())
			}
		})
	}
}
