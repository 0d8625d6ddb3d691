//go:build unix

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/internal/holder"
	"github.com/fairrw/rwlock/internal/redistest"
)

// holderLease is the lease of the holder children: short, so that the
// tests wait a few seconds at most.
const holderLease = time.Second

// TestFaultHolderKilled: a process holding the write is killed (kill -9: no
// unlock, no message). The lock frees within the lease, and a waiter in
// another process gets it without any notification (it wakes by the PTTL
// bound, or an expiry invalidation), with a greater fencing token.
func TestFaultHolderKilled(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, p := range policies {
		for _, tr := range transports {
			t.Run(p.String()+"/"+tr.name, func(t *testing.T) {
				ctl := startLateness(t)
				name := "fault:killed:" + p.String() + ":" + tr.name
				child := holder.Start(t, holder.Spec{Addr: r.Addr, Policy: p.String(), Name: name, Write: true, Lease: holderLease})
				waiter := newClient(t, r, tr, fairrw.WithPolicy(p)).RWMutex(name)
				got := make(chan lockResult, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*holderLease)
					defer cancel()
					l, err := waiter.Lock(ctx)
					got <- lockResult{l, err, time.Now()}
				}()
				time.Sleep(50 * time.Millisecond) // the waiter is queued
				killed := time.Now()
				child.Kill()
				res := <-got
				if res.err != nil {
					t.Fatalf("waiter after the holder was killed: %v", res.err)
				}
				defer mustUnlock(t, res.l)
				ctl.within(fmt.Sprintf("waiter granted after the kill (the %v lease +1s)", holderLease), res.at.Sub(killed), holderLease+time.Second)
				if res.l.Token() <= child.Token {
					t.Fatalf("waiter's token %d not above the dead holder's %d", res.l.Token(), child.Token)
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
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			ctl := startLateness(t)
			name := "fault:paused:" + p.String()
			child := holder.Start(t, holder.Spec{Addr: r.Addr, Policy: p.String(), Name: name, Write: true, Lease: holderLease})
			var store history.Store
			if !store.Increment(child.Token) {
				t.Fatal("the store refused the first holder's token")
			}
			child.Pause()
			defer child.Resume()
			paused := time.Now()
			c := newClient(t, r, transports[0], fairrw.WithPolicy(p))
			ctx, cancel := context.WithTimeout(context.Background(), 10*holderLease)
			defer cancel()
			l, err := c.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatalf("lock after the holder froze: %v", err)
			}
			defer mustUnlock(t, l)
			ctl.within(fmt.Sprintf("lock freed after the holder froze (its %v lease +1s)", holderLease), time.Since(paused), holderLease+time.Second)
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

type lockResult struct {
	l   *fairrw.Lease
	err error
	at  time.Time
}
