package behaviour

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
)

// TestOneSubscriptionPerLock: a Client's waiters on one lock share one
// subscription, which ends when the last of them leaves.
func TestOneSubscriptionPerLock(t *testing.T) {
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			e := itest.NewWireEnv(t)
			n := "subscription:" + tr.Name
			holder := itest.MustLock(t, e.Client(t).RWMutex(n), fairrw.Write)
			c := itest.NewClient(t, e.R, tr, fairrw.WithPolicy(fairrw.Redisson()))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range 5 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := c.RWMutex(n).Lock(ctx); err == nil {
						t.Error("waiter granted beside the holder")
					}
				}()
			}
			itest.WaitSubscribers(t, e, compat.Channel(n), 1)
			time.Sleep(100 * time.Millisecond) // every waiter has joined by now
			if got := subscribers(t, e, compat.Channel(n)); got != 1 {
				t.Fatalf("%d subscriptions for 5 waiters of one client, want 1", got)
			}
			cancel()
			wg.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for subscribers(t, e, compat.Channel(n)) != 0 {
				if time.Now().After(deadline) {
					t.Fatal("subscription kept after the last waiter left")
				}
				time.Sleep(5 * time.Millisecond)
			}
			itest.MustUnlock(t, holder)
		})
	}
}

func subscribers(t *testing.T, e itest.WireEnv, channel string) int64 {
	t.Helper()
	counts, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().PubsubNumsub().Channel(channel).Build()).ToArray()
	if err != nil || len(counts) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v %v", counts, err)
	}
	n, _ := counts[1].AsInt64()
	return n
}
