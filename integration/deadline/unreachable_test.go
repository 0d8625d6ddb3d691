package deadline

import (
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestLeaseLostWhileRedisUnreachable: when no renewal can be confirmed (the
// server is frozen), every lease ends with ErrLeaseLost by its local
// deadline, without any answer from Redis.
func TestLeaseLostWhileRedisUnreachable(t *testing.T) {
	r := redistest.StartProcess(t)
	ctl := lateness.Start(t)
	const lease = 600 * time.Millisecond
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithLeaseTime(lease))
	w := itest.MustLock(t, c.RWMutex("unreachable:w"), fairrw.Write)
	rd := itest.MustLock(t, c.RWMutex("unreachable:r"), fairrw.Read, fairrw.WithLease(time.Hour))
	r.Pause(t)
	defer r.Resume(t)
	select {
	case <-w.Done():
		if !errors.Is(w.Err(), fairrw.ErrLeaseLost) {
			t.Fatalf("Err = %v, want ErrLeaseLost", w.Err())
		}
		ctl.Within("the lease reported lost, after its deadline", time.Since(w.Deadline()), 500*time.Millisecond)
	case <-time.After(10 * lease):
		t.Fatal("lease still alive with Redis frozen")
	}
	// An explicit lease has nothing to confirm: it stays valid to its end.
	select {
	case <-rd.Done():
		t.Fatalf("hour-long lease ended: %v", rd.Err())
	default:
	}
	r.Resume(t)
}
