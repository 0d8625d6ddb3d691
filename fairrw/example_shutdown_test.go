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

func ExampleClient_Shutdown() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	stopping, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption())) // a pod being replaced
	if err != nil {
		log.Fatal(err)
	}
	other, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption())) // another pod
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()

	held, err := stopping.RWMutex("jobs:import").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// On SIGTERM: release every hold, within a bound, then exit.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := stopping.Shutdown(sctx); err != nil {
		log.Print(err) // what was not released expires with its lease
	}
	fmt.Println("holder told to stop:", errors.Is(context.Cause(held.Context()), fairrw.ErrClosed))

	// The lock is free at once, not after its 30s lease.
	l, err := other.RWMutex("jobs:import").TryLock(ctx)
	fmt.Println("taken by the other pod:", err == nil)
	if err == nil {
		_ = l.Unlock(ctx)
	}
	// Output:
	// holder told to stop: true
	// taken by the other pod: true
}
