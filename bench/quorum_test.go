package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// quorumVariants are the locks BenchmarkQuorum compares, in this order: a
// plain Client on one node (the reference), then Quorums over 1, 3 and 5
// nodes.
var quorumVariants = []struct {
	name  string
	nodes int
	plain bool
}{
	{"client", 1, true},
	{"quorum-1", 1, false},
	{"quorum-3", 3, false},
	{"quorum-5", 5, false},
}

// quorumBenchNode is one redis-server of BenchmarkQuorum.
type quorumBenchNode struct {
	r   *redistest.Redis
	rdb rueidis.Client // INFO, SCAN, FLUSHALL
}

// BenchmarkQuorum: one goroutine doing uncontended write lock+unlock cycles
// on one lock name, side by side in one run:
//
//	lock=client    Client.RWMutex(name).Lock and Lease.Unlock on one node
//	lock=quorum-1  QuorumRWMutex.Lock and its Lease.Unlock over that node
//	lock=quorum-3  the same over three redis-servers
//	lock=quorum-5  the same over five
//
// under the Redisson and writer-preferring policies. The five redis-servers
// are started here (loopback, no persistence) and share this machine's CPUs
// with the benchmark: a quorum's parallel round trips run on the same cores,
// unlike nodes on separate hosts. Every cycle must be granted at once, on
// every node, with a token above the last; Unlock must return nil.
//
// Reports ns/op and allocs/op (of this process: the quorum's goroutines per
// node included), scripts/op (EVALSHA and EVAL calls on all the nodes per
// cycle), redis-cpu-µs/op and client-cpu-µs/op (the CPU time per cycle of
// every node and of this process), and other-cpus (how many CPUs the rest
// of the machine kept busy meanwhile: a run with other-cpus well above 0
// was disturbed). The CPU times come in 10 ms ticks: use -benchtime of a
// second or more.
func BenchmarkQuorum(b *testing.B) {
	var id [6]byte
	_, _ = rand.Read(id[:])
	run := hex.EncodeToString(id[:])
	nodes := make([]quorumBenchNode, 5)
	for i := range nodes {
		r := redistest.StartProcess(b)
		nodes[i] = quorumBenchNode{r: r, rdb: r.Client(b, func(o *rueidis.ClientOption) { o.DisableCache = true })}
	}
	for _, pc := range policyCases[:2] {
		b.Run("policy="+pc.name, func(b *testing.B) {
			for _, v := range quorumVariants {
				b.Run("lock="+v.name, func(b *testing.B) {
					benchQuorum(b, nodes, v.nodes, v.plain, pc.policy, "fairrw-bench:"+run+":quorum:"+pc.name+":"+v.name)
				})
			}
		})
	}
}

// benchQuorum measures the variant on the first n of all nodes; the server
// figures are read from all (the others idle).
func benchQuorum(b *testing.B, all []quorumBenchNode, n int, plain bool, policy fairrw.Policy, name string) {
	nodes := all[:n]
	resetQuorumNodes(b, nodes) // registered first: runs after every Client closed
	clients := make([]*fairrw.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = newClient(b, n.r.ClientOption(), fairrw.WithPolicy(policy))
	}
	var cycle func(ctx context.Context, last *uint64) error
	if plain {
		m := clients[0].RWMutex(name)
		cycle = func(ctx context.Context, last *uint64) error {
			l, err := m.Lock(ctx)
			if err != nil {
				return err
			}
			if err := checkCycle(l.Token(), last, hidden.WokenBy(l) == ""); err != nil {
				return err
			}
			return l.Unlock(ctx)
		}
	} else {
		q, err := fairrw.NewQuorum(clients)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = q.Close() })
		m := q.RWMutex(name)
		cycle = func(ctx context.Context, last *uint64) error {
			l, err := m.Lock(ctx)
			if err != nil {
				return err
			}
			if got := hidden.LeaseNodes(l); got != len(nodes) {
				return fmt.Errorf("held on %d of %d nodes", got, len(nodes))
			}
			if err := checkCycle(l.Token(), last, true); err != nil {
				return err
			}
			return l.Unlock(ctx)
		}
	}
	ctx := context.Background()
	var last uint64
	for range 2 { // connections, scripts, subscriptions none: uncontended
		if err := cycle(ctx, &last); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	before := sampleQuorumNodes(b, all)
	b.ResetTimer()
	for range b.N {
		if err := cycle(ctx, &last); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := sampleQuorumNodes(b, all)
	reportQuorumSample(b, before, after)
}

// quorumSample is the work of every node, this process and the machine so
// far.
type quorumSample struct {
	redis   time.Duration // every node's used_cpu_user + used_cpu_sys
	scripts int64         // every node's EVALSHA + EVAL calls
	client  time.Duration // this process's CPU time; -1 if unknown
	machine time.Duration // every CPU's busy time; -1 if unknown
}

// reportQuorumSample reports, per cycle, the script calls and the CPU time
// of every node and of this process, and how many CPUs everything else on
// the machine kept busy meanwhile (other-cpus: near 0 for a clean run).
func reportQuorumSample(b *testing.B, before, after quorumSample) {
	wall := b.Elapsed()
	if wall <= 0 || b.N == 0 {
		return
	}
	redis := after.redis - before.redis
	b.ReportMetric(float64(after.scripts-before.scripts)/float64(b.N), "scripts/op")
	b.ReportMetric(micros(redis)/float64(b.N), "redis-cpu-µs/op")
	if min(before.client, after.client, before.machine, after.machine) < 0 {
		return
	}
	client := after.client - before.client
	b.ReportMetric(micros(client)/float64(b.N), "client-cpu-µs/op")
	others := after.machine - before.machine - client - redis
	b.ReportMetric(max(float64(others)/float64(wall), 0), "other-cpus")
}

// checkCycle checks a write grant: at once, with a token above the last.
func checkCycle(token uint64, last *uint64, unwaited bool) error {
	if !unwaited {
		return errors.New("an uncontended Lock waited")
	}
	if token <= *last {
		return fmt.Errorf("token %d after %d", token, *last)
	}
	*last = token
	return nil
}

// sampleQuorumNodes sums the script calls and CPU time of nodes so far,
// and samples this process's and the machine's CPU time.
func sampleQuorumNodes(b *testing.B, nodes []quorumBenchNode) quorumSample {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := quorumSample{client: processCPU(), machine: machineCPU()}
	for _, n := range nodes {
		info, err := n.rdb.Do(ctx, n.rdb.B().Info().Section("cpu", "commandstats").Build()).ToString()
		if err != nil {
			b.Fatalf("INFO on %s: %v", n.r.Addr, err)
		}
		s.redis += redisinfo.CPU(info)
		s.scripts += redisinfo.ParseCommandStats(info).Scripts()
	}
	return s
}

// resetQuorumNodes registers a cleanup that fails b if a lock key (not a
// fencing token or marker with a TTL) is left on a node once every Client
// closed, and then empties the nodes for the next variant.
func resetQuorumNodes(b *testing.B, nodes []quorumBenchNode) {
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range nodes {
			keys, err := scanKeys(ctx, n.rdb, "*")
			if err != nil {
				b.Errorf("SCAN on %s: %v", n.r.Addr, err)
			}
			for _, k := range keys {
				if ok, err := expiring(ctx, n.rdb, k); err != nil || !ok {
					b.Errorf("key left on %s: %q (%v)", n.r.Addr, k, err)
				}
			}
			if err := n.rdb.Do(ctx, n.rdb.B().Flushall().Sync().Build()).Error(); err != nil {
				b.Errorf("FLUSHALL on %s: %v", n.r.Addr, err)
			}
		}
	})
}
