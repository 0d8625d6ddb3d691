package fairrwtest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// Two processes share a lock on one Redis, and one of them dies holding
// it: the other gets the lock when the dead holder's lease runs out.
func Example() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // fairrwtest.NewServer(t) in a test
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()

	// Each process is a Client. The worker's leases last 200ms, so that
	// its death frees the lock soon.
	worker, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()), fairrw.WithLeaseTime(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	other, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()

	if _, err := worker.RWMutex("job:1").Lock(ctx); err != nil {
		log.Fatal(err)
	}
	worker.Close() // dies: Close releases nothing, and renews nothing more
	_, err = other.RWMutex("job:1").TryLock(ctx)
	fmt.Println("while the worker's lease lasts:", errors.Is(err, fairrw.ErrNotAcquired))

	l, err := other.RWMutex("job:1").Lock(ctx) // waits out the lease
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("once it ran out, the write lock is held:", l.Err() == nil)
	_ = l.Unlock(ctx)
	// Output:
	// while the worker's lease lasts: true
	// once it ran out, the write lock is held: true
}

// An Example, or a TestMain, has no testing.T: it starts the server itself
// and closes it, after the Clients on it.
func ExampleStart() {
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

	l, err := c.RWMutex("orders:42").Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("keys in Redis while held:", len(redis.Miniredis().Keys()) > 0)
	_ = l.Unlock(context.Background())
	// Output: keys in Redis while held: true
}

// reserve is code under test: it takes the cart's write lock.
func reserve(ctx context.Context, c *fairrw.Client, cart string) error {
	l, err := c.RWMutex(cart).Lock(ctx)
	if err != nil {
		return err
	}
	defer l.Unlock(ctx)
	return nil // reserve the items
}

// A unit test of reserve: its Client is on an in-process Redis of its own,
// and both are closed when the test ends. (An Example has no *testing.T to
// give NewClient, so this one is compiled but not run; TestReserve runs
// the same test.)
func ExampleNewClient() {
	// func TestReserve(t *testing.T) {
	testReserve := func(t *testing.T) {
		c := fairrwtest.NewClient(t)
		if err := reserve(t.Context(), c, "cart:7"); err != nil {
			t.Fatal(err)
		}
	}
	_ = testReserve
}

// Two Clients on one Server are two processes: here a second one finds the
// cart locked. (Compiled but not run, as ExampleNewClient; TestReserveBusy
// runs the same test.)
func ExampleNewServer() {
	// func TestReserveBusy(t *testing.T) {
	testReserveBusy := func(t *testing.T) {
		srv := fairrwtest.NewServer(t)
		other := srv.NewClient(t) // another process, holding the cart
		held, err := other.RWMutex("cart:7").Lock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer held.Unlock(t.Context())

		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := reserve(ctx, srv.NewClient(t), "cart:7"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("reserve while another process holds the cart: %v", err)
		}
	}
	_ = testReserveBusy
}
