package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/locktest"
	"github.com/fairrw/rwlock/internal/redistest"
)

// TestLeaseContext runs the Lease.Context scenarios under every policy,
// each with a Mutex beside it.
func TestLeaseContext(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) { locktest.RunLeaseContext(t, newEnv(t, r, transports[0], p)) })
	}
}

// TestLeaseContextWhileRedisPaused: with no renewal confirmed (Redis
// frozen), every lease's Context ends by its local deadline, with the
// loss as its cause, though Redis answers nothing.
func TestLeaseContextWhileRedisPaused(t *testing.T) {
	r := redistest.StartProcess(t)
	const lease = 600 * time.Millisecond
	for _, tg := range fAllTargets() {
		c := fClient(t, r, tg, fairrw.WithLeaseTime(lease))
		l, err := tg.owner(c, "ctx-paused:"+tg.String()).acquire(testCtx(t), fairrw.Write, true)
		fMust(t, tg.String(), l, err)
		defer func() {
			if l.Err() == nil {
				_ = l.Unlock(testCtx(t))
			}
		}()
		pausedCheck(t, r, l, lease)
	}
}

func pausedCheck(t *testing.T, r *redistest.Redis, l *fairrw.Lease, lease time.Duration) {
	t.Helper()
	ctl := startLateness(t)
	lctx := l.Context()
	r.Pause(t)
	defer r.Resume(t)
	select {
	case <-lctx.Done():
		ctl.within("the Context ended after the lease's deadline", time.Since(l.Deadline()), 300*time.Millisecond)
		if cause := context.Cause(lctx); !errors.Is(cause, fairrw.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
	case <-time.After(10 * lease):
		t.Fatal("Context alive with Redis frozen")
	}
}
