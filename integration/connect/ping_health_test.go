package connect

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

// TestPingClusterShardDown: Ping is the Client's health, not one random
// node's. On a cluster of 3 primaries with a replica each, killed
// replicas fail no Ping (the slots are all served); then a killed primary
// without a replica fails every Ping, naming it, not one in as many as
// there are nodes, before and after the cluster marks it failed.
func TestPingClusterShardDown(t *testing.T) {
	cl := redistest.StartClusterProcesses(t, 3, 1)
	c := itest.NewClientOn(t, cl.ClientOption(), itest.Transports[1])
	ctx := itest.TestCtx(t)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping on a healthy cluster: %v", err)
	}
	pings := func(want bool, what string) {
		t.Helper()
		failed := 0
		var last error
		for range 15 {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err := c.Ping(pctx)
			cancel()
			if err != nil {
				failed++
				last = err
			}
		}
		t.Logf("%s: %d of 15 Pings failed (last: %v)", what, failed, last)
		switch {
		case want && failed != 15:
			t.Errorf("%s: %d of 15 Pings failed, want every one", what, failed)
		case !want && failed != 0:
			t.Errorf("%s: %d of 15 Pings failed (%v), want none", what, failed, last)
		}
		if want && last != nil && !errors.Is(last, fairrw.ErrUnavailable) {
			t.Errorf("%s: Ping %v, want ErrUnavailable", what, last)
		}
	}
	// Every replica killed: the slots are all served still.
	primaries := cl.Primaries(t)
	for _, p := range primaries {
		if r := cl.ReplicaOf(t, p); r != "" {
			cl.Node(r).Kill(t)
		}
	}
	pings(false, "replicas killed")
	dead := primaries[2]
	cl.Node(dead).Kill(t)
	pings(true, "a primary without a replica killed")
	// Once the cluster marked it failed (after its node timeout, 2 s), its
	// slots are served by no one still.
	time.Sleep(3 * time.Second)
	pings(true, "a primary without a replica marked failed")
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := c.Ping(pctx); err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("Ping with %s down: %v, want its address named", dead, err)
	}
}
