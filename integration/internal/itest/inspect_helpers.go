package itest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

const InspectLease = 30 * time.Second

func NoCache(o *rueidis.ClientOption) { o.DisableCache = true }

// inspect calls Inspect and fails the test on an error.
func Inspect(t testing.TB, c *fairrw.Client, name string) *fairrw.LockInfo {
	t.Helper()
	info, err := c.Inspect(TestCtx(t), name)
	if err != nil {
		t.Fatalf("Inspect(%q): %v", name, err)
	}
	if info.Name != name {
		t.Fatalf("Inspect(%q).Name = %q", name, info.Name)
	}
	return info
}

// holders renders info's holders as "<mode> <owner> x<holds>", in order,
// and checks each Remaining is in (0, most] (and the LeaseMargin that Redis
// keeps a hold past its lease).
func Holders(t testing.TB, info *fairrw.LockInfo, most time.Duration) []string {
	t.Helper()
	var out []string
	most += hidden.LeaseMargin
	for _, h := range info.Holders {
		if h.Remaining <= 0 || h.Remaining > most {
			t.Errorf("%s: holder %s %s has %v left, want (0, %v]", info.Name, h.Mode, h.Owner, h.Remaining, most)
		}
		out = append(out, fmt.Sprintf("%s %s x%d", h.Mode, h.Owner, h.Holds))
	}
	return out
}

// waiters renders waiters as their owners' client ids (the part before the
// last ':'), in order, and checks each entry is alive.
func Waiters(t testing.TB, ws []fairrw.WaiterInfo) []string {
	t.Helper()
	var out []string
	for _, w := range ws {
		if w.Remaining <= 0 || w.Remaining > InspectLease+hidden.LeaseMargin {
			t.Errorf("waiter %s has %v left, want (0, %v]", w.Owner, w.Remaining, InspectLease)
		}
		client := w.Owner[:strings.LastIndex(w.Owner, ":")]
		out = append(out, client)
	}
	return out
}

func WantList(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

// zcard is the size of the zset at key (0 when missing).
func Zcard(t testing.TB, raw rueidis.Client, key string) int64 {
	t.Helper()
	n, err := raw.Do(TestCtx(t), raw.B().Zcard().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

// until polls cond for up to 5 s.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bgAcquire is an acquire running in the background, cancelled and joined at
// the end of the test (its lease, if it got one, is unlocked).
type BgAcquire struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func StartWaiter(t testing.TB, acquire func(context.Context, ...fairrw.AcquireOption) (*fairrw.Lease, error)) *BgAcquire {
	ctx, cancel := context.WithCancel(context.Background())
	w := &BgAcquire{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if l, err := acquire(ctx); err == nil {
			_ = l.Unlock(context.Background())
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *BgAcquire) stop() { w.cancel(); <-w.done }

// mustLease fails the test when an acquire failed: mustLease(t)(m.Lock(ctx)).
func MustLease(t testing.TB) func(*fairrw.Lease, error) *fairrw.Lease {
	return func(l *fairrw.Lease, err error) *fairrw.Lease {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// readHolds is how a read's hold count shows under policy p: Redisson
// counts them; the fair policies keep one deadline per reader, no count.
func ReadHolds(p fairrw.Policy, n int) string {
	if p.String() == "redisson" {
		return "x" + strconv.Itoa(n)
	}
	return "x0"
}

// AwaitWaitingWriters polls c's Inspect of name until it shows n writers
// waiting (a waiter queued in Redis), within ctx.
func AwaitWaitingWriters(t testing.TB, ctx context.Context, c *fairrw.Client, name string, n int) {
	t.Helper()
	AwaitWaiting(t, ctx, c, name, -1, n)
}

// AwaitWaiting polls c's Inspect of name until it shows readers readers
// (PhaseFair's waiting or admitted readers; -1: any number) and writers
// writers waiting, within ctx.
func AwaitWaiting(t testing.TB, ctx context.Context, c *fairrw.Client, name string, readers, writers int) {
	t.Helper()
	for {
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if (readers < 0 || len(info.WaitingReaders) == readers) && len(info.WaitingWriters) == writers {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// RLockThenUnlock takes m's read on a goroutine of its own, waiting, and
// unlocks it at once; the outcome comes on the channel.
func RLockThenUnlock(ctx context.Context, m *fairrw.RWMutex) <-chan error {
	done := make(chan error, 1)
	go func() {
		l, err := m.RLock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	return done
}

// LockThenUnlock takes m's write on a goroutine of its own, waiting, and
// unlocks it at once; the outcome comes on the channel.
func LockThenUnlock(ctx context.Context, m *fairrw.RWMutex) <-chan error {
	done := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	return done
}
