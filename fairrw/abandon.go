package fairrw

import (
	"context"
	"sync"
	"time"
)

// abandon gives up owner o after an acquire of mode that ends without a
// Lease: cancelled, closed, failed, or granted too late to be used. One
// release with the abandon flag marks the owner given up (no copy of its
// attempts takes anything from then on), releases whatever hold it was
// granted meanwhile, and withdraws its queue entries; Redis applies all of
// it at once, so whenever it runs, nothing of o stays. A give-up is never
// refused as stale (see lua/common.lua): it only removes, and o is never
// used again.
//
// It is tried for the unlock timeout, detached from ctx's cancellation;
// if Redis has not answered by then (paused, cut off), it goes on in the
// background until Redis answers or the Client closes. So a cancelled Lock
// leaves nothing held once Redis is reachable again, however long it was
// not. (After Close, what is left expires with its lease.)
func (m *RWMutex) abandon(ctx context.Context, o *owner, mode Mode) {
	if m.giveUp(ctx, o, mode, m.c.unlockTimeout) {
		return
	}
	m.c.background.run(func(done <-chan struct{}) {
		backoff := minRetryBackoff
		for {
			select {
			case <-done:
				return
			case <-time.After(backoff):
			}
			if m.giveUp(context.Background(), o, mode, m.c.unlockTimeout) {
				return
			}
			backoff = min(backoff*2, time.Second)
		}
	})
}

// giveUp runs one give-up of o, bounded by timeout, and reports whether
// Redis answered it (or refused it for good).
func (m *RWMutex) giveUp(ctx context.Context, o *owner, mode Mode, timeout time.Duration) bool {
	_, err := m.release(ctx, o, mode, ownerState{}, true, false, timeout)
	return err == nil || definite(err)
}

// tasks are a Client's background give-ups: Close stops them and waits.
type tasks struct {
	mu     sync.Mutex
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

func newTasks() *tasks { return &tasks{done: make(chan struct{})} }

// run starts f in its own goroutine, unless the tasks were closed; f must
// return soon after done is closed.
func (t *tasks) run(f func(done <-chan struct{})) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f(t.done)
	}()
}

// close stops every task and waits for them.
func (t *tasks) close() {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.done)
	}
	t.mu.Unlock()
	t.wg.Wait()
}
