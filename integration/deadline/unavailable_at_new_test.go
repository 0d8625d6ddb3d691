package deadline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestNewWhileRedisDown: New returns a usable Client while Redis is down
// (a pod that starts before Redis); calls wait within their ctx and fail
// with ErrUnavailable naming the address; Ping says the same; once Redis
// is up, the same Client's first Lock succeeds.
func TestNewWhileRedisDown(t *testing.T) {
	r := redistest.StartProcess(t)
	r.Stop(t)
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			ctl := lateness.Start(t)
			c := itest.NewClient(t, r, tr)
			short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.RWMutex("down:" + tr.Name).Lock(short)
			if !errors.Is(err, fairrw.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock with Redis down: %v, want ErrUnavailable and the ctx's error", err)
			}
			if !strings.Contains(err.Error(), r.Addr) {
				t.Fatalf("the error does not name the address %s: %v", r.Addr, err)
			}
			ctl.Within("Lock with Redis down, after its deadline", time.Since(start)-200*time.Millisecond, time.Second)
			pctx, pcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer pcancel()
			if err := c.Ping(pctx); !errors.Is(err, fairrw.ErrUnavailable) {
				t.Fatalf("Ping with Redis down: %v, want ErrUnavailable", err)
			}
		})
	}
	clients := make([]*fairrw.Client, len(itest.Transports))
	for i, tr := range itest.Transports {
		clients[i] = itest.NewClient(t, r, tr)
	}
	r.Restart(t)
	for i, tr := range itest.Transports {
		c := clients[i]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("%s: Ping once Redis is up: %v", tr.Name, err)
		}
		l, err := c.RWMutex("up:" + tr.Name).Lock(ctx)
		if err != nil {
			t.Fatalf("%s: Lock once Redis is up: %v", tr.Name, err)
		}
		itest.MustUnlock(t, l)
		cancel()
	}
}
