package integration

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

func sleepLeases(n int) { time.Sleep(time.Duration(n) * 600 * time.Millisecond) }

// TestInvalidationWakesReaders: a downgrade publishes nothing (Java's rule),
// yet it lets other readers in. With client tracking, the change to the lock
// key wakes them at once; without it they would wait for the PTTL (30s).
func TestInvalidationWakesReaders(t *testing.T) {
	e := newWireEnv(t)
	const n = "wakeup:downgrade"
	holder := e.client(t).RWMutex(n)
	reader := e.client(t).RWMutex(n)
	w := mustLock(t, holder, fairrw.Write)
	r := mustLock(t, holder, fairrw.Read)
	got := make(chan *fairrw.Lease, 1)
	go func() {
		l, err := reader.RLock(testCtx(t))
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitSubscribers(t, e, "redisson_rwlock:{"+n+"}", 1)
	time.Sleep(50 * time.Millisecond) // let the reader fail its retry and sleep
	mustUnlock(t, w)                  // downgrade: mode=read, nothing published
	select {
	case l := <-got:
		if l == nil {
			t.FailNow()
		}
		if l.WokenBy() != "invalidation" {
			t.Errorf("reader woken by %q, want invalidation", l.WokenBy())
		}
		mustUnlock(t, l)
	case <-time.After(15 * time.Second):
		t.Fatal("reader not woken by the downgrade's invalidation")
	}
	mustUnlock(t, r)
}
