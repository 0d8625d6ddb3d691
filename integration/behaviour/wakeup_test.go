package behaviour

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
)

// TestInvalidationWakesReaders: a downgrade publishes nothing (Java's rule),
// yet it lets other readers in. With client tracking, the change to the lock
// key wakes them at once; without it they would wait for the PTTL (30s).
func TestInvalidationWakesReaders(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wakeup:downgrade"
	holder := e.Client(t).RWMutex(n)
	reader := e.Client(t).RWMutex(n)
	w := itest.MustLock(t, holder, fairrw.Write)
	r := itest.MustFurther(t, w, fairrw.Read) // the downgrade's read
	got := make(chan *fairrw.Lease, 1)
	go func() {
		l, err := reader.RLock(itest.TestCtx(t))
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	itest.WaitSubscribers(t, e, "redisson_rwlock:{"+n+"}", 1)
	time.Sleep(50 * time.Millisecond) // let the reader fail its retry and sleep
	itest.MustUnlock(t, w)            // downgrade: mode=read, nothing published
	select {
	case l := <-got:
		if l == nil {
			t.FailNow()
		}
		if hidden.WokenBy(l) != "invalidation" {
			t.Errorf("reader woken by %q, want invalidation", hidden.WokenBy(l))
		}
		itest.MustUnlock(t, l)
	case <-time.After(15 * time.Second):
		t.Fatal("reader not woken by the downgrade's invalidation")
	}
	itest.MustUnlock(t, r)
}

// TestPublishCommandOverride: the publish override (hidden.WithPublish) to SPUBLISH makes
// releases SPUBLISH and waiters SSUBSCRIBE, also on a single node, and the
// waiter is still woken by the release's message.
func TestPublishCommandOverride(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wakeup:sharded"
	tr := itest.Transports[1] // no tracking: only the message can wake the waiter
	holder := itest.NewClient(t, e.R, tr, hidden.WithPublish("spublish").(fairrw.Option))
	waiter := itest.NewClient(t, e.R, tr, hidden.WithPublish("spublish").(fairrw.Option))
	w := itest.MustLock(t, holder.RWMutex(n), fairrw.Write)
	got := make(chan *fairrw.Lease, 1)
	go func() {
		l, err := waiter.RWMutex(n).Lock(itest.TestCtx(t))
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(100 * time.Millisecond) // the waiter subscribes and sleeps
	itest.MustUnlock(t, w)
	select {
	case l := <-got:
		if l == nil {
			t.FailNow()
		}
		// The default policy grants on release: the message carries the grant.
		if hidden.WokenBy(l) != "grant" {
			t.Errorf("woken by %q, want grant", hidden.WokenBy(l))
		}
		itest.MustUnlock(t, l)
	case <-time.After(15 * time.Second):
		t.Fatal("waiter not woken by the sharded message")
	}
	stats, err := redisinfo.Read(itest.TestCtx(t), e.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if stats["spublish"].Calls == 0 || stats["ssubscribe"].Calls == 0 {
		t.Fatalf("no SPUBLISH/SSUBSCRIBE in commandstats")
	}
}
