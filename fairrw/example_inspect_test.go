package fairrw_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

func ExampleClient_Inspect() {
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

	other, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption())) // another process
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()

	m := c.RWMutex("orders:42")
	w, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// A writer of another Client queues behind the first. (A second
	// writer of this Client would wait in the Client, in its cohort: see
	// WithCohorts.)
	waitCtx, stopWaiting := context.WithCancel(ctx)
	waiting := make(chan error, 1)
	go func() {
		_, err := other.RWMutex("orders:42").Lock(waitCtx)
		waiting <- err
	}()

	// Who holds orders:42, for how long, and who waits?
	info, err := c.Inspect(ctx, "orders:42")
	for err == nil && len(info.WaitingWriters) == 0 { // until the waiter has queued
		time.Sleep(10 * time.Millisecond)
		info, err = c.Inspect(ctx, "orders:42")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("policy:", info.Policy)
	for _, h := range info.Holders {
		fmt.Printf("%s held by us: %v, %d hold(s), %v left, token of our lease: %v\n",
			h.Mode, h.Owner == w.Owner(), h.Holds, h.Remaining.Round(time.Second), info.Token == w.Token())
	}
	fmt.Println("writers waiting:", len(info.WaitingWriters))

	stopWaiting()
	<-waiting
	_ = w.Unlock(ctx)
	// A cancelled Lock returns at once; its leaving the queue, or giving
	// back a grant that reached it meanwhile (this Unlock's), goes on in
	// the background, within moments.
	info, err = c.Inspect(ctx, "orders:42")
	for deadline := time.Now().Add(5 * time.Second); err == nil && len(info.Holders) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		info, err = c.Inspect(ctx, "orders:42")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after: policy %q, %d holders\n", info.Policy, len(info.Holders))
	// Output:
	// policy: writer-preferring
	// write held by us: true, 1 hold(s), 30s left, token of our lease: true
	// writers waiting: 1
	// after: policy "", 0 holders
}
