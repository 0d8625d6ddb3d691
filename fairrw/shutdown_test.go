package fairrw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

func TestShutdown(t *testing.T) {
	t.Parallel() // each policy on a miniredis of its own
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) { locktest.RunShutdown(t, miniEnv(t, p)) })
	}
}

func TestLeaseContext(t *testing.T) {
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) { locktest.RunLeaseContext(t, miniEnv(t, p)) })
	}
}

// TestShutdownBoundedWhenRedisGone: with its Redis gone, Shutdown gives up
// the releases when its ctx ends, still ends every lease and closes the
// Client, and says what it could not do.
func TestShutdownBoundedWhenRedisGone(t *testing.T) {
	mr, opt := redistest.Miniredis(t)
	// One connection, made by New: miniredis's Close waits only for the
	// connections it has registered, and one it accepted as it closed
	// goes on serving (rueidis's second pipe, dialed on first use, did so
	// with two copies of the suite side by side, and the release went
	// through it).
	opt.PipelineMultiplex = -1
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.RWMutex("gone").Lock(quorumCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	mr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.Shutdown(ctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Shutdown took %v with a 300ms ctx", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with Redis gone: %v, want DeadlineExceeded", err)
	}
	if !errors.Is(l.Err(), fairrw.ErrClosed) || context.Cause(l.Context()) != l.Err() {
		t.Fatalf("lease after Shutdown: Err %v, Context cause %v", l.Err(), context.Cause(l.Context()))
	}
	if err := c.Shutdown(context.Background()); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Shutdown: %v, want the first's error", err)
	}
}

// TestQuorumLeaseContext: a quorum lease's Context is one value, alive
// while the lease is, and ends with ErrUnlocked on Unlock. (Its end by a
// loss, when node Clients shut down, is TestShutdownQuorumNodes in
// integration.)
func TestQuorumLeaseContext(t *testing.T) {
	q, _ := quorumNodes(t, 3, fairrw.WriterPreferring(), 30*time.Second)
	ctx := quorumCtx(t)
	l, err := q.RWMutex("q:ctx").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lctx := l.Context()
	if lctx != l.Context() || lctx.Err() != nil {
		t.Fatalf("Context of a held quorum lease: %v", lctx.Err())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(lctx); !errors.Is(cause, hidden.ErrUnlocked) {
		t.Fatalf("cause after Unlock: %v, want ErrUnlocked", cause)
	}
}
