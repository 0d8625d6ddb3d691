package fairrwtest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// TestMiniredisClockAhead pins what Server.Miniredis warns of: a server
// clock moved ahead (SetTime) is refused, not taken as leases running out.
func TestMiniredisClockAhead(t *testing.T) {
	srv := fairrwtest.NewServer(t)
	c := srv.NewClient(t)
	srv.Miniredis().SetTime(time.Now().Add(time.Minute))
	if _, err := c.RWMutex("ahead").Lock(t.Context()); !errors.Is(err, fairrw.ErrClockSkew) {
		t.Fatalf("Lock on a server a minute ahead: %v, want ErrClockSkew", err)
	}
}
