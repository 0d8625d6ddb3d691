package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// uncontendedGoroutines is the concurrency of every Uncontended variant.
const uncontendedGoroutines = 64

// uncontendedPolicies are the policies BenchmarkUncontended measures. The
// Redisson policy keeps the names it had before there was a choice
// (lock=*/transport=*, without a policy key), which RESULTS.md and older
// runs use; the others add policy=<name> before them.
var uncontendedPolicies = []struct {
	name   string // "" for the Redisson policy's unprefixed names
	policy fairrw.Policy
}{
	{"", fairrw.Redisson()},
	{"writer-preferring", fairrw.WriterPreferring()}, // the default policy: the uncontended target's
}

// BenchmarkUncontended: 64 goroutines, each on its own lock name, doing
// lock+unlock cycles through one shared Client, next to the baselines of two
// bare EVALSHA calls per cycle (bench/internal/baseline) through a rueidis
// client built from the same ClientOption. Compare cycles/s of
// [policy=*/]lock=*/transport=* with baseline=evalsha-pair (SET, then DEL)
// and baseline=lua-pair (HGET/HSET/PEXPIRE, then HEXISTS/DEL/PUBLISH) of the
// same flushdelay.
func BenchmarkUncontended(b *testing.B) {
	e := newEnv(b)
	for _, fd := range []struct {
		name  string
		delay time.Duration
	}{
		{"0", 0},
		{"20us", 20 * time.Microsecond},
	} {
		b.Run("flushdelay="+fd.name, func(b *testing.B) {
			for _, p := range baseline.Pairs() {
				b.Run("baseline="+p.Name, func(b *testing.B) {
					benchBaselinePair(b, e, e.option(fd.delay, false), p)
				})
			}
			for _, p := range uncontendedPolicies {
				prefix := ""
				if p.name != "" {
					prefix = "policy=" + p.name + "/"
				}
				for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
					for _, tr := range transports {
						b.Run(fmt.Sprintf("%slock=%s/transport=%s", prefix, mode, tr.name), func(b *testing.B) {
							benchUncontended(b, e, e.option(fd.delay, tr.disableCache), p.policy, mode)
						})
					}
				}
			}
		})
	}
}

func benchBaselinePair(b *testing.B, e *env, opt rueidis.ClientOption, p *baseline.Pair) {
	e.checkLeftovers(b)
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rdb.Close)
	ctx := context.Background()
	keys := make([][]string, uncontendedGoroutines)
	cycle := func(g int) error { return p.Cycle(ctx, rdb, keys[g]) }
	for g := range keys {
		keys[g] = p.Keys(e.name("baseline", p.Name, g))
		if err := cycle(g); err != nil { // loads the scripts, opens the connections
			b.Fatal(err)
		}
	}
	runCycles(b, e, cycle)
}

func benchUncontended(b *testing.B, e *env, opt rueidis.ClientOption, p fairrw.Policy, mode fairrw.Mode) {
	e.checkLeftovers(b)
	c := newClient(b, opt, fairrw.WithPolicy(p)) // after newClient's Redisson: it wins
	ctx := context.Background()
	mus := make([]*fairrw.RWMutex, uncontendedGoroutines)
	cycle := func(g int) error {
		l, err := acquire(ctx, mus[g], mode)
		if err != nil {
			return err
		}
		if w := hidden.WokenBy(l); w != "" {
			return fmt.Errorf("%s: an uncontended acquire waited (woken by %q)", hidden.Name(mus[g]), w)
		}
		return l.Unlock(ctx)
	}
	for g := range mus {
		mus[g] = c.RWMutex(e.name("uncontended", mode, g))
		if err := cycle(g); err != nil {
			b.Fatal(err)
		}
	}
	runCycles(b, e, cycle)
}

// runCycles measures cycle run by uncontendedGoroutines goroutines (each its
// own g), with the server's figures around the measured loop and the
// client's CPU time per op (client-cpu-µs/op: this whole test process's
// user+system CPU over the loop, from /proc/self/stat in 10 ms ticks, so
// the lock library, its rueidis or go-redis connections, the GC and this
// loop; nothing is subtracted).
func runCycles(b *testing.B, e *env, cycle func(g int) error) {
	b.ReportAllocs()
	server := e.sampleServer(b)
	client := processCPU()
	spread(b, uncontendedGoroutines, func(g int, next func() bool) error {
		for next() {
			if err := cycle(g); err != nil {
				return err
			}
		}
		return nil
	})
	if after := processCPU(); client >= 0 && after >= 0 {
		b.ReportMetric(micros(after-client)/float64(b.N), "client-cpu-µs/op")
	}
	e.reportServer(b, server)
	reportRate(b, "cycles/s")
}
