package leasewatch

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNextRound: with a 1.5s lease the watchdog renews every 500ms, so the
// deadline moves twice in a row, forward; after Unlock NextRound reports the
// ended lease. (A 300ms lease, renewed every 100ms, was lost on a loaded
// machine, two suites side by side: a renewal not confirmed in time.)
func TestNextRound(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	const lease = 1500 * time.Millisecond
	c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithLeaseTime(lease))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.RWMutex("watch").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := NextRound(l, l.Deadline(), lease)
	if err != nil {
		t.Fatal(err)
	}
	second, err := NextRound(l, first, lease)
	if err != nil {
		t.Fatal(err)
	}
	if !second.After(first) {
		t.Fatalf("deadlines %v then %v: not forward", first, second)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := NextRound(l, second, lease); err == nil {
		t.Fatal("NextRound on an unlocked lease returned no error")
	}
}
