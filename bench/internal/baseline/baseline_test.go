package baseline_test

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestPairs runs every pair on a real Redis: a cycle leaves no key behind,
// runs the commands Pair.Commands says (commandstats) in two script calls,
// and an unlock that finds nothing held fails.
func TestPairs(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	ctx := context.Background()
	for _, p := range all() {
		t.Run(p.Name, func(t *testing.T) {
			keys := p.Keys("baseline-test:" + p.Name)
			if err := p.Cycle(ctx, rdb, keys); err != nil { // loads the scripts
				t.Fatal(err)
			}
			before, err := redisinfo.Read(ctx, rdb)
			if err != nil {
				t.Fatal(err)
			}
			const cycles = 10
			for range cycles {
				if err := p.Cycle(ctx, rdb, keys); err != nil {
					t.Fatal(err)
				}
			}
			after, err := redisinfo.Read(ctx, rdb)
			if err != nil {
				t.Fatal(err)
			}
			d := after.Sub(before)
			if got := d.Scripts(); got != 2*cycles {
				t.Errorf("%d script calls, want %d", got, 2*cycles)
			}
			// Not counted: INFO, and a connection's set-up (HELLO) if
			// rueidis opened one meanwhile.
			if got := d.Commands("info", "hello", "client|tracking", "client"); got != int64(cycles*(2+p.Commands)) {
				t.Errorf("%d commands, want %d (two scripts and %d commands per cycle): %v", got, cycles*(2+p.Commands), p.Commands, d)
			}
			if p == baseline.OneKeyFloor {
				return // its state stays, a tombstone for the latch's lifetime
			}
			n, err := rdb.Do(ctx, rdb.B().Exists().Key(keys[0]).Build()).AsInt64()
			if err != nil || n != 0 {
				t.Errorf("EXISTS after the cycles = %d, %v: want the key gone", n, err)
			}
		})
	}
}

// TestMiniredis: every pair cycles on miniredis, fairbench's fallback when
// no redis-server is installed.
func TestMiniredis(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	for _, p := range all() {
		for range 3 {
			if err := p.Cycle(context.Background(), rdb, p.Keys("baseline-test:"+p.Name)); err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
		}
	}
}

// all returns the pairs and the floors of the other layouts.
func all() []*baseline.Pair { return append(baseline.Pairs(), baseline.Floors()[1:]...) }
