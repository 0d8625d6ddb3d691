package fairrwtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// TestReserve and TestReserveBusy run the tests that ExampleNewClient and
// ExampleNewServer show, which an Example cannot run.
func TestReserve(t *testing.T) {
	c := fairrwtest.NewClient(t)
	if err := reserve(t.Context(), c, "cart:7"); err != nil {
		t.Fatal(err)
	}
}

func TestReserveBusy(t *testing.T) {
	srv := fairrwtest.NewServer(t)
	other := srv.NewClient(t)
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
