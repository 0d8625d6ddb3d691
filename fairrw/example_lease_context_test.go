package fairrw_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

func ExampleLease_Context() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.RWMutex("reports:daily").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	work := l.Context() // pass it to the work the lock guards
	fmt.Println("working:", work.Err() == nil)
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after Unlock:", context.Cause(work))

	// A lease that runs out (or is lost) cancels its Context with the loss.
	short, err := c.RWMutex("reports:hourly").Lock(ctx, fairrw.WithLease(50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	<-short.Context().Done()
	fmt.Println("lost:", errors.Is(context.Cause(short.Context()), fairrw.ErrLeaseLost))
	// Output:
	// working: true
	// after Unlock: fairrw: lease unlocked
	// lost: true
}

func ExampleLease_Guard() {
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A request's context: its deadline and values carry over.
	req, cancelReq := context.WithTimeout(context.WithValue(context.Background(), requestID{}, "r-42"), time.Minute)
	defer cancelReq()
	l, err := c.RWMutex("reports:weekly").Lock(req, fairrw.WithLease(50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	work, done := l.Guard(req) // ends with the request or the lease
	defer done()
	fmt.Println("request id:", work.Value(requestID{}))
	<-work.Done() // the 50 ms lease runs out first
	fmt.Println("stopped by the lease:", errors.Is(context.Cause(work), fairrw.ErrLeaseLost))
	// Output:
	// request id: r-42
	// stopped by the lease: true
}

type requestID struct{}

func ExampleLease_Unlock_nil() {
	redis, err := fairrwtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	holder, err := c.RWMutex("nightly").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	l, err := c.RWMutex("nightly").TryLock(ctx) // taken: l is nil
	fmt.Println("TryLock:", errors.Is(err, fairrw.ErrNotAcquired))
	fmt.Println("Unlock of nil:", errors.Is(l.Unlock(ctx), fairrw.ErrNotHeld)) // no panic
	if err := holder.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("second Unlock:", errors.Is(holder.Unlock(ctx), fairrw.ErrNotHeld))
	// Output:
	// TryLock: true
	// Unlock of nil: true
	// second Unlock: true
}
