package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// scaleOutParallelism is b.SetParallelism of BenchmarkScaleOut, goroutines
// per GOMAXPROCS (64 goroutines on a 2-CPU machine, as in
// BenchmarkUncontended), unless FAIRRW_BENCH_SCALEOUT_PARALLELISM sets
// another. A goroutine spends most of a cycle waiting for its two round
// trips, so it takes many to keep three shards busy: with 64, each primary of
// cluster-3 still has about 21 goroutines on it. bench/RESULTS.md shows a
// scan of this setting.
const (
	scaleOutParallelism    = 32
	scaleOutParallelismEnv = "FAIRRW_BENCH_SCALEOUT_PARALLELISM"
)

// scaleNode is one redis-server of a topology.
type scaleNode struct {
	addr    string
	primary bool
	rdb     rueidis.Client // to this node only: INFO, FLUSHALL, SCAN
}

// scaleTopology is the Redis deployment of one BenchmarkScaleOut variant.
type scaleTopology struct {
	opt   rueidis.ClientOption // what the fairrw Client is built from
	nodes []scaleNode          // every primary and replica
	own   bool                 // started here: FLUSHALL between variants
	run   string               // random, in every lock name of this process
}

// scaleOutTopologies are compared side by side, in this order, each started
// when its turn comes and stopped after its policies ran.
var scaleOutTopologies = []struct {
	name  string
	start func(*testing.B) *scaleTopology
}{
	{"single", startSingle},
	{"single-replica", startSingleReplica},
	{"cluster-1", startClusterOne},
	{"cluster-3-noreplica", func(b *testing.B) *scaleTopology {
		c := redistest.StartClusterProcesses(b, 3, 0)
		return newClusterTopology(b, c)
	}},
	{"cluster-3", func(b *testing.B) *scaleTopology {
		return newClusterTopology(b, redistest.StartCluster(b, 3, 1))
	}},
}

// BenchmarkScaleOut: uncontended write lock+unlock cycles of every policy,
// side by side in one run, on five deployments started on this machine:
//
//	topology=single               one redis-server (or FAIRRW_REDIS_ADDR)
//	topology=single-replica       one primary and its replica
//	topology=cluster-1            one node in cluster mode owning every slot
//	topology=cluster-3-noreplica  three primaries
//	topology=cluster-3            three primaries with one replica each (or
//	                              FAIRRW_REDIS_CLUSTER)
//
// single-replica and cluster-1 separate the cost of replication and of
// cluster mode from that of sharding. RunParallel goroutines
// (scaleOutParallelism per GOMAXPROCS) each loop on their own lock name
// through one shared Client; the names' slots are spread evenly over the
// 16384 slots (spreadNames), so the shards of a cluster share the load.
// Every cycle must be granted without waiting, with a fencing token above
// the name's last one, and its Unlock must return nil, or the benchmark
// fails.
//
// Reports cycles/s and, from INFO of every node and /proc of this machine
// taken around the measured loop:
//   - redis-cpu-µs/op: CPU time (used_cpu_user + used_cpu_sys) of every
//     redis-server per cycle, split into primary-cpu-µs/op and
//     replica-cpu-µs/op (replicas apply the replication stream);
//   - client-cpu-µs/op: this process (fairrw, rueidis, the Go runtime);
//   - redis-cpus, client-cpus, other-cpus: how many CPUs of the machine
//     Redis, this process and everything else on the machine (other
//     processes; only for servers started here) kept busy during the loop;
//   - max-primary-busy: the busiest primary's CPU time over the wall time
//     (near 1: its single event loop was the bottleneck);
//   - scripts/op: EVALSHA and EVAL calls on the primaries per cycle (2 when
//     nothing is retried); max-shard-share: the busiest primary's share of
//     them (1 on one node, 1/3 when three shards share evenly);
//   - scripts/read: those calls per read of a client socket on the
//     primaries (total_reads_processed), how many commands each wake-up of
//     an event loop finds waiting.
//
// The client's and the machine's CPU times come in 10 ms ticks: the CPU
// figures are meaningful with -benchtime of a second or more. -count N runs
// each variant N times in a row; to have the topologies alternate in time,
// so that a change in the machine's load hits them alike, loop over
// -count 1 instead (bench/RESULTS.md, "Scaling out").
func BenchmarkScaleOut(b *testing.B) {
	var id [6]byte
	_, _ = rand.Read(id[:])
	run := hex.EncodeToString(id[:])
	for _, tc := range scaleOutTopologies {
		b.Run("topology="+tc.name, func(b *testing.B) {
			t := tc.start(b)
			t.run = run
			for _, pc := range policyCases {
				b.Run("policy="+pc.name, func(b *testing.B) { benchScaleOut(b, t, pc) })
			}
		})
	}
}

func benchScaleOut(b *testing.B, t *scaleTopology, pc policyCase) {
	t.resetAfter(b)
	c := newClient(b, t.opt, fairrw.WithPolicy(pc.policy))
	parallelism := scaleOutParallelismFor(b)
	b.SetParallelism(parallelism)
	goroutines := parallelism * runtime.GOMAXPROCS(0)
	ctx := context.Background()
	mus := make([]*fairrw.RWMutex, goroutines)
	checks := make([]holdCheck, goroutines)
	for g, name := range spreadNames(goroutines, "fairrw-bench:"+t.run+":scaleout:"+pc.name) {
		mus[g] = c.RWMutex(name)
		if err := scaleCycle(ctx, mus[g], &checks[g]); err != nil { // connections, scripts
			b.Fatal(err)
		}
	}
	errs := make([]error, goroutines)
	var next atomic.Int64
	b.ReportAllocs()
	before := t.sample(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1) - 1)
		for pb.Next() {
			if err := scaleCycle(ctx, mus[g], &checks[g]); err != nil {
				errs[g] = err
				return
			}
		}
	})
	b.StopTimer()
	after := t.sample(b)
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	for i := range checks {
		checks[i].verify(b)
	}
	reportRate(b, "cycles/s")
	t.report(b, before, after)
}

// scaleOutParallelismFor reads FAIRRW_BENCH_SCALEOUT_PARALLELISM.
func scaleOutParallelismFor(b *testing.B) int {
	b.Helper()
	v := os.Getenv(scaleOutParallelismEnv)
	if v == "" {
		return scaleOutParallelism
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number of goroutines per GOMAXPROCS", scaleOutParallelismEnv, v)
	}
	return n
}

// scaleCycle takes m for writing and releases it, failing if the grant
// waited; check counts the hold and its token, checked after the run.
func scaleCycle(ctx context.Context, m *fairrw.RWMutex, check *holdCheck) error {
	l, err := m.Lock(ctx)
	if err != nil {
		return fmt.Errorf("%s: lock: %w", hidden.Name(m), err)
	}
	if w := hidden.WokenBy(l); w != "" {
		return fmt.Errorf("%s: an uncontended lock waited (woken by %q)", hidden.Name(m), w)
	}
	check.enter(fairrw.Write, l.Token())
	check.exit(fairrw.Write)
	if err := l.Unlock(ctx); err != nil {
		return fmt.Errorf("%s: unlock: %w", hidden.Name(m), err)
	}
	return nil
}

// spreadNames returns n lock names starting with prefix, without braces (so
// each name is its own hash tag), whose slots are spread evenly: name g's
// slot is in the g-th of n equal ranges of slots. Since a lock's keys all
// live in its name's slot, every shard of a cluster gets its share of the
// names, whatever the slot map, and the share does not change from run to
// run as it would with random names.
func spreadNames(n int, prefix string) []string {
	names := make([]string, n)
	for g := range names {
		lo, hi := g*slot.Count/n, (g+1)*slot.Count/n
		for k := 0; ; k++ {
			name := prefix + ":" + strconv.Itoa(g) + ":" + strconv.Itoa(k)
			if s := int(slot.Of(name)); lo <= s && s < hi {
				names[g] = name
				break
			}
		}
	}
	return names
}
