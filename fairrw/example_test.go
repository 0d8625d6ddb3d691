package fairrw_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

func Example() {
	ctx := context.Background()
	// In a service: fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	c, err := fairrw.New(fairrw.WithClientOption(redisOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	m := c.RWMutex("orders:42")
	l, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding the", l.Mode(), "lock on", l.Name())
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: holding the write lock on orders:42
}

func ExampleRWMutex_RLock() {
	ctx := context.Background()
	c, err := fairrw.New(fairrw.WithClientOption(redisOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Two owners read together; a writer must wait for both.
	r1, _ := c.RWMutex("catalog").RLock(ctx)
	r2, _ := c.RWMutex("catalog").RLock(ctx)
	_, err = c.RWMutex("catalog").TryLock(ctx)
	fmt.Println("writer:", errors.Is(err, fairrw.ErrNotAcquired))
	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	w, err := c.RWMutex("catalog").TryLock(ctx)
	fmt.Println("writer after the readers left:", err == nil)
	_ = w.Unlock(ctx)
	// Output:
	// writer: true
	// writer after the readers left: true
}

func ExampleRWMutex_TryLock() {
	ctx := context.Background()
	c, err := fairrw.New(fairrw.WithClientOption(redisOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	held, _ := c.RWMutex("report").Lock(ctx)
	defer held.Unlock(ctx)
	if _, err := c.RWMutex("report").TryLock(ctx); errors.Is(err, fairrw.ErrNotAcquired) {
		fmt.Println("someone else is writing the report")
	}
	// Output: someone else is writing the report
}

func ExampleRWMutex_Lock_timeout() {
	c, err := fairrw.New(fairrw.WithClientOption(redisOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	held, _ := c.RWMutex("invoice:7").Lock(context.Background())
	defer held.Unlock(context.Background())

	// Wait at most 100ms: Lock returns the context's error and holds nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.RWMutex("invoice:7").Lock(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}

func ExampleLease_Done() {
	ctx := context.Background()
	c, err := fairrw.New(fairrw.WithClientOption(redisOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A lease with an explicit time is not renewed: it ends when it runs out.
	l, err := c.RWMutex("batch").Lock(ctx, fairrw.WithLease(50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	for step := 0; ; step++ {
		select {
		case <-l.Done():
			fmt.Println("lease lost:", errors.Is(l.Err(), fairrw.ErrLeaseLost))
			return
		case <-time.After(20 * time.Millisecond): // one step of work
		}
	}
	// Output: lease lost: true
}

// store is a storage layer guarded by a lock: it remembers the highest
// fencing token it has seen and refuses writes that carry a lower one, so a
// holder that lost its lease without knowing (a long GC pause, a failover)
// cannot overwrite the work of the holder after it.
type store struct {
	highest uint64
	value   string
}

var errStaleToken = errors.New("stale fencing token")

func (s *store) write(token uint64, value string) error {
	if token < s.highest {
		return errStaleToken
	}
	s.highest, s.value = token, value
	return nil
}

func ExampleLease_Token() {
	ctx := context.Background()
	c, err := fairrw.New(fairrw.WithClientOption(redisOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var s store

	// The first holder's lease runs out while it is paused.
	first, _ := c.RWMutex("ledger").Lock(ctx, fairrw.WithLease(30*time.Millisecond))
	<-first.Done()

	// Meanwhile a second holder takes the lock and writes.
	second, _ := c.RWMutex("ledger").Lock(ctx)
	fmt.Println("second:", s.write(second.Token(), "from second"))
	_ = second.Unlock(ctx)

	// The first holder wakes up and tries to write: the store refuses it.
	fmt.Println("first:", s.write(first.Token(), "from first"))
	fmt.Println("value:", s.value)
	// Output:
	// second: <nil>
	// first: stale fencing token
	// value: from second
}
