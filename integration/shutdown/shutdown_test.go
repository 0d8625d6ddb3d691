package shutdown

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestShutdown runs the Shutdown scenarios under every policy (each with a
// Mutex beside it) over every transport: the waiters woken by Shutdown's
// releases are woken by pub/sub, a grant message or an invalidation.
func TestShutdown(t *testing.T) {
	r := redistest.Start(t)
	for _, tr := range itest.Transports {
		for _, p := range itest.Policies {
			t.Run(tr.Name+"/"+p.String(), func(t *testing.T) { locktest.RunShutdown(t, itest.NewEnv(t, r, tr, p)) })
		}
	}
}

// TestShutdownBoundedWhenRedisPaused: with Redis frozen, Shutdown returns
// when its ctx ends (plus, at most, the unlock timeout of a waiter's retry
// already sent), with an error wrapping ctx's (the Client's rueidis client
// is the test's: see pausableClient); every lease has ended, the Client's own waiter has returned
// ErrClosed, and what was not released expires with its lease.
func TestShutdownBoundedWhenRedisPaused(t *testing.T) {
	for _, tg := range itest.FAllTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			ctl := lateness.Start(t)
			r := redistest.StartProcess(t)
			raw := itest.FRaw(t, r)
			const lease = time.Second
			holder := itest.FClient(t, r, tg, fairrw.WithLeaseTime(lease))
			// A waiter's retry sent to the frozen server is waited for
			// within the unlock timeout (rueidis cannot interrupt it).
			const unlockTimeout = 700 * time.Millisecond
			c := itest.PausableClient(t, r, fairrw.WithPolicy(tg.Policy), fairrw.WithLeaseTime(lease), fairrw.WithUnlockTimeout(unlockTimeout))
			name := "shutdown-paused:" + tg.String()
			held, err := tg.Owner(holder, name).Acquire(itest.TestCtx(t), fairrw.Write, true)
			itest.FMust(t, "holder", held, err)
			own, err := tg.Owner(c, name+":own").Acquire(itest.TestCtx(t), fairrw.Write, true)
			itest.FMust(t, "own", own, err)
			further, err := tg.Owner(c, name+":own").Further(itest.TestCtx(t), own, fairrw.Write)
			itest.FMust(t, "further", further, err)
			waiter := make(chan error, 1)
			go func() {
				_, err := tg.Owner(c, name).Acquire(itest.TestCtx(t), fairrw.Write, true)
				waiter <- err
			}()
			time.Sleep(100 * time.Millisecond) // the waiter is queued
			r.Pause(t)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err = c.Shutdown(ctx)
			took := time.Since(start)
			r.Resume(t)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown with Redis paused: %v, want DeadlineExceeded", err)
			}
			ctl.Within(fmt.Sprintf("Shutdown with a 300ms ctx and a %v unlock timeout", unlockTimeout), took, 300*time.Millisecond+unlockTimeout+500*time.Millisecond)
			if err := <-waiter; !errors.Is(err, fairrw.ErrClosed) {
				t.Fatalf("waiter: %v, want ErrClosed", err)
			}
			for _, l := range []*fairrw.Lease{own, further} {
				if !errors.Is(context.Cause(l.Context()), fairrw.ErrClosed) {
					t.Fatalf("lease after Shutdown: %v, want ErrClosed", context.Cause(l.Context()))
				}
			}
			if err := held.Unlock(itest.TestCtx(t)); err != nil {
				t.Fatalf("holder's Unlock: %v", err)
			}
			itest.EventuallyNoLockKeys(t, raw, name)
		})
	}
}

// TestCloseCutsShutdownShort: Close during a Shutdown that waits for a
// frozen Redis stops it at once: both return, the Shutdown with an error
// wrapping ErrClosed.
func TestCloseCutsShutdownShort(t *testing.T) {
	ctl := lateness.Start(t)
	r := redistest.StartProcess(t)
	c := itest.PausableClient(t, r, fairrw.WithLeaseTime(time.Second))
	itest.MustLock(t, c.RWMutex("cut-short"), fairrw.Write)
	itest.MustLockMutex(t, c.Mutex("cut-short:m"))
	r.Pause(t)
	defer r.Resume(t)
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(context.Background()) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-shut:
		if !errors.Is(err, fairrw.ErrClosed) {
			t.Fatalf("Shutdown cut short by Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown still running after Close")
	}
	ctl.Within("Close during Shutdown", time.Since(start), 1500*time.Millisecond)
}

// TestShutdownQuorumNodes: a node Client's Shutdown releases its node holds
// of quorum leases. The quorum lease stays held while a majority does, is
// lost (its Context with it) when the majority goes, gives back the node
// hold left, and another quorum owner is granted at once.
func TestShutdownQuorumNodes(t *testing.T) {
	var clients, others []*fairrw.Client
	for range 3 {
		r := redistest.Start(t)
		clients = append(clients, itest.NewClient(t, r, itest.Transports[0]))
		others = append(others, itest.NewClient(t, r, itest.Transports[0]))
	}
	q, err := fairrw.NewQuorum(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	next, err := fairrw.NewQuorum(others)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	l, err := q.RWMutex("shutdown-quorum").Lock(itest.TestCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := clients[0].Shutdown(itest.TestCtx(t)); err != nil {
		t.Fatal(err)
	}
	if hidden.LeaseNodes(l) != 2 || l.Context().Err() != nil {
		t.Fatalf("after one node's Shutdown: held on %d nodes, Context %v", hidden.LeaseNodes(l), context.Cause(l.Context()))
	}
	if err := clients[1].Shutdown(itest.TestCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("quorum lease alive on one node of three")
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, fairrw.ErrLeaseLost) || cause != l.Err() {
		t.Fatalf("quorum lease cause %v, Err %v", cause, l.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	got, err := next.RWMutex("shutdown-quorum").Lock(ctx)
	if err != nil {
		t.Fatalf("another quorum owner after the Shutdowns: %v", err)
	}
	if wait := time.Since(start); wait > 3*time.Second {
		t.Fatalf("another quorum owner waited %v: the node holds were not released", wait)
	}
	if err := got.Unlock(itest.TestCtx(t)); err != nil {
		t.Fatal(err)
	}
}
