package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestLeaseContext runs the Lease.Context scenarios under every policy,
// each with a Mutex beside it.
func TestLeaseContext(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) { locktest.RunLeaseContext(t, itest.NewEnv(t, r, itest.Transports[0], p)) })
	}
}

// TestLeaseContextWhileRedisPaused: with no renewal confirmed (Redis
// frozen), every lease's Context ends by its local deadline, with the
// loss as its cause, though Redis answers nothing.
func TestLeaseContextWhileRedisPaused(t *testing.T) {
	r := redistest.StartProcess(t)
	const lease = 600 * time.Millisecond
	for _, tg := range itest.FAllTargets() {
		c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(lease))
		l, err := tg.Owner(c, "ctx-paused:"+tg.String()).Acquire(itest.TestCtx(t), fairrw.Write, true)
		itest.FMust(t, tg.String(), l, err)
		defer func() {
			if l.Err() == nil {
				_ = l.Unlock(itest.TestCtx(t))
			}
		}()
		pausedCheck(t, r, l, lease)
	}
}

func pausedCheck(t *testing.T, r *redistest.Redis, l *fairrw.Lease, lease time.Duration) {
	t.Helper()
	ctl := lateness.Start(t)
	lctx := l.Context()
	r.Pause(t)
	defer r.Resume(t)
	select {
	case <-lctx.Done():
		ctl.Within("the Context ended after the lease's deadline", time.Since(l.Deadline()), 300*time.Millisecond)
		if cause := context.Cause(lctx); !errors.Is(cause, fairrw.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
	case <-time.After(10 * lease):
		t.Fatal("Context alive with Redis frozen")
	}
}
