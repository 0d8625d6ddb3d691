package behaviour

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestPingNamesAddress: Ping "returns an error wrapping ErrUnavailable
// (and the ctx's error, or the connection's) naming the address when it
// does not [answer]" -- on a Client that had connected, Redis then frozen
// or stopped.
func TestPingNamesAddress(t *testing.T) {
	r := redistest.StartProcess(t)
	c := itest.NewClient(t, r, itest.Transports[1])
	if err := c.Ping(itest.TestCtx(t)); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := c.Ping(ctx)
		t.Logf("%s: %v", what, err)
		if !errors.Is(err, fairrw.ErrUnavailable) {
			t.Errorf("%s: Ping %v, want ErrUnavailable", what, err)
		} else if !strings.Contains(err.Error(), r.Addr) {
			t.Errorf("%s: Ping's error does not name the address %s: %v", what, r.Addr, err)
		}
	}
	r.Pause(t)
	check("frozen")
	r.Resume(t)
	r.Stop(t)
	check("stopped")
}
