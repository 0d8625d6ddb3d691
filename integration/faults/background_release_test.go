package faults

import (
	"context"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// silence is how long the nodes stay paused: past the unlock timeout, so
// that the release's own tries are over and only the background's are
// left.
const silence = 2 * itest.QuorumUnlockTimeout

// freeAfter polls a TryLock of name by a fresh Client on r until it is
// granted, and returns how long after since that was; it fails t when the
// lock is still held after half the lease (the hold would then have run out
// by itself, not been released).
func freeAfter(t *testing.T, r *redistest.Redis, name string, since time.Time, lease time.Duration) time.Duration {
	t.Helper()
	c := itest.NewClientOn(t, r.ClientOption(), itest.Transports[1])
	ctx, cancel := context.WithTimeout(context.Background(), lease/2)
	defer cancel()
	for {
		tctx, tcancel := context.WithTimeout(ctx, time.Second)
		l, err := c.RWMutex(name).TryLock(tctx)
		tcancel()
		if err == nil {
			took := time.Since(since)
			_ = l.Unlock(ctx)
			return took
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%q still held on %s %v after the outage healed (lease %v): the release did not go on in the background (last: %v)", name, r.Addr, time.Since(since).Round(time.Millisecond), lease, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestQuorumUnlockCutShortFreesAfterHealing: a quorum lease's Unlock while
// all its nodes, or one, are silent (paused) past the unlock timeout. Once
// they resume, each node frees the lock within a small part of the lease
// (30 s): its release went on in the background.
func TestQuorumUnlockCutShortFreesAfterHealing(t *testing.T) {
	const lease = 30 * time.Second
	for _, c := range []struct {
		name   string
		paused []int
	}{{"all", []int{0, 1, 2}}, {"one", []int{0}}} {
		t.Run(c.name, func(t *testing.T) {
			qn := itest.StartQuorumNodes(t, 3)
			q := qn.Quorum(t, itest.Transports[0], nil, fairrw.WithLeaseTime(lease))
			name := "background:quorum:" + c.name
			ctx := itest.TestCtx(t)
			l, err := q.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range c.paused {
				qn.Servers[i].Pause(t)
			}
			uctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err = l.Unlock(uctx)
			cancel()
			t.Logf("Unlock with %d of 3 nodes paused: %v", len(c.paused), err)
			if len(c.paused) == 3 && err == nil {
				t.Fatal("Unlock with every node paused succeeded")
			}
			time.Sleep(silence)
			for _, i := range c.paused {
				qn.Servers[i].Resume(t)
			}
			healed := time.Now()
			for _, i := range c.paused {
				took := freeAfter(t, qn.Servers[i], name, healed, lease)
				t.Logf("node %d free %v after it resumed", i, took.Round(time.Millisecond))
				if took > lease/10 {
					t.Errorf("node %d free %v after it resumed, want within a tenth of the lease (%v)", i, took, lease)
				}
			}
		})
	}
}

// TestQuorumLateGiveBackFreesAfterHealing: one node paused during a quorum
// round, so its attempt is late (written, unanswered), past the unlock
// timeout. The grant of the others is unlocked; once the node resumes, the
// attempt's grant there is given back within a small part of the lease.
func TestQuorumLateGiveBackFreesAfterHealing(t *testing.T) {
	const lease = 30 * time.Second
	qn := itest.StartQuorumNodes(t, 3)
	q := qn.Quorum(t, itest.Transports[0], []fairrw.QuorumOption{fairrw.WithNodeTimeout(100 * time.Millisecond)}, fairrw.WithLeaseTime(lease))
	name := "background:quorum:late"
	ctx := itest.TestCtx(t)
	qn.Servers[0].Pause(t)
	l, err := q.RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with one node of three paused: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(silence)
	qn.Servers[0].Resume(t)
	healed := time.Now()
	took := freeAfter(t, qn.Servers[0], name, healed, lease)
	t.Logf("node 0 free %v after it resumed", took.Round(time.Millisecond))
	if took > lease/10 {
		t.Errorf("node 0 free %v after it resumed, want within a tenth of the lease (%v)", took, lease)
	}
}

// TestUnlockCutShortFreesAfterHealing: the same for a plain Client, all of
// whose Redis is paused past the unlock timeout during an Unlock.
func TestUnlockCutShortFreesAfterHealing(t *testing.T) {
	const lease = 30 * time.Second
	r := redistest.StartProcess(t)
	c := itest.NewClientOn(t, r.ClientOption(), itest.Transports[0], fairrw.WithLeaseTime(lease), fairrw.WithUnlockTimeout(itest.QuorumUnlockTimeout))
	name := "background:plain"
	ctx := itest.TestCtx(t)
	l, err := c.RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Pause(t)
	uctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = l.Unlock(uctx)
	cancel()
	if err == nil {
		t.Fatal("Unlock with Redis paused succeeded")
	}
	time.Sleep(silence)
	r.Resume(t)
	healed := time.Now()
	took := freeAfter(t, r, name, healed, lease)
	t.Logf("free %v after Redis resumed", took.Round(time.Millisecond))
	if took > lease/10 {
		t.Errorf("free %v after Redis resumed, want within a tenth of the lease (%v)", took, lease)
	}
}
