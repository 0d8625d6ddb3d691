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
