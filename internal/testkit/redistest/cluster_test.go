package redistest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestClusterHarness checks the cluster harness against the cluster itself:
// 3 primaries with a replica each, a clean failover, a live migration whose
// keys stay readable throughout, and a killed primary replaced by its replica.
func TestClusterHarness(t *testing.T) {
	c := redistest.StartClusterProcesses(t, 3, 1)
	primaries := c.Primaries(t)
	if len(primaries) != 3 {
		t.Fatalf("primaries %v, want 3", primaries)
	}
	for _, p := range primaries {
		if r := c.ReplicaOf(t, p); slices.Contains(primaries, r) {
			t.Fatalf("replica %s of %s is a primary", r, p)
		}
	}
	rdb := c.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const key = "{harness}:k"
	s := int(slot.Of(key))
	set := func(k, v string) {
		t.Helper()
		if err := rdb.Do(ctx, rdb.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	get := func(k string) string {
		t.Helper()
		v, err := rdb.Do(ctx, rdb.B().Get().Key(k).Build()).ToString()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		return v
	}
	for i := range 25 {
		set(fmt.Sprintf("{harness}:%d", i), "v")
	}
	set(key, "1")

	from, to := c.Failover(t, s)
	if c.PrimaryOf(t, s) != to || from == to {
		t.Fatalf("after failover slot %d is on %s, want %s (was %s)", s, c.PrimaryOf(t, s), to, from)
	}
	if v := get(key); v != "1" {
		t.Fatalf("after failover %s = %q", key, v)
	}

	var target string
	for _, p := range c.Primaries(t) {
		if p != to {
			target = p
			break
		}
	}
	m := c.BeginMigration(t, s, target)
	if n := m.MoveKeys(t); n != 26 {
		t.Fatalf("moved %d keys, want 26", n)
	}
	set("{harness}:new", "2") // ASK to the target while the slot migrates
	if v := get(key); v != "1" {
		t.Fatalf("during migration %s = %q", key, v)
	}
	m.Finish(t)
	if got := c.PrimaryOf(t, s); got != target {
		t.Fatalf("after migration slot %d is on %s, want %s", s, got, target)
	}
	keys := c.Keys(t)
	if n := countPrefix(keys, "{harness}:"); n != 27 {
		t.Fatalf("%d harness keys after migration, want 27: %v", n, keys)
	}

	killed, promoted := c.KillPrimary(t, s)
	if killed != target || c.PrimaryOf(t, s) != promoted {
		t.Fatalf("killed %s (want %s), slot on %s (want %s)", killed, target, c.PrimaryOf(t, s), promoted)
	}
	if v := get(key); v != "1" {
		t.Fatalf("after the kill %s = %q", key, v)
	}
	c.Revive(t, killed)
	if got := c.ReplicaOf(t, promoted); got != killed {
		t.Fatalf("revived %s; replica of %s is %s", killed, promoted, got)
	}
}

func countPrefix(keys []string, prefix string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
