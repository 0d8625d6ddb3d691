package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

// EnvCluster names an existing Redis Cluster to use instead of starting one:
// comma-separated seed addresses (host:port).
const EnvCluster = "FAIRRW_REDIS_CLUSTER"

const (
	// clusterNodeTimeout is cluster-node-timeout: how long a primary may be
	// unreachable before its replica takes over (Redis's default is 15 s).
	clusterNodeTimeout = 2000
	// clusterTimeout bounds the waits for a cluster to form or to converge
	// after a failover or a migration.
	clusterTimeout = 30 * time.Second
)

// Cluster is a Redis Cluster for a test.
type Cluster struct {
	Seeds []string // addresses to give a cluster client
	Kind  string   // KindProcess (started here) or KindEnv (FAIRRW_REDIS_CLUSTER)

	nodes map[string]*Redis // KindProcess: every node, by address

	mu     sync.Mutex
	admins map[string]rueidis.Client // one plain client per node, for admin commands
}

// StartCluster returns a Redis Cluster for the test: the one named by
// FAIRRW_REDIS_CLUSTER (Kind "env"; nothing is flushed), or else a fresh one
// from StartClusterProcesses.
func StartCluster(tb testing.TB, primaries, replicas int) *Cluster {
	tb.Helper()
	if seeds := os.Getenv(EnvCluster); seeds != "" {
		c := &Cluster{Kind: KindEnv, admins: make(map[string]rueidis.Client)}
		tb.Cleanup(c.closeAdmins)
		for s := range strings.SplitSeq(seeds, ",") {
			c.Seeds = append(c.Seeds, strings.TrimSpace(s))
		}
		return c
	}
	return StartClusterProcesses(tb, primaries, replicas)
}

// StartClusterProcesses always starts a fresh cluster, for the tests that
// fail over, kill or migrate: primaries*(1+replicas) redis-server processes
// (StartProcess) with cluster-enabled, joined by `redis-cli --cluster create
// --cluster-replicas replicas` (about 2 s). It returns once every node
// reports cluster_state:ok, all agree on the slots, and every replica is in
// sync. The nodes are killed at cleanup. Without redis-server and redis-cli
// on PATH the test is skipped, or fails when FAIRRW_REQUIRE_REDIS=1.
func StartClusterProcesses(tb testing.TB, primaries, replicas int) *Cluster {
	tb.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		unavailable(tb, requireRedis(), EnvRequireRedis, "redis-cli not on PATH (install redis-tools): %v", err)
	}
	c := &Cluster{Kind: KindProcess, admins: make(map[string]rueidis.Client)}
	tb.Cleanup(c.closeAdmins)
	c.nodes = make(map[string]*Redis)
	for range primaries * (1 + replicas) {
		r := StartProcess(tb,
			"--cluster-enabled", "yes",
			"--cluster-node-timeout", fmt.Sprint(clusterNodeTimeout),
			// A replica of a killed primary takes over however far behind it
			// was: the tests measure what async replication loses.
			"--cluster-replica-validity-factor", "0",
			"--repl-diskless-sync-delay", "0",
			// A shard without a primary stops only its own slots; with the
			// default (yes) every node answers CLUSTERDOWN from the moment a
			// primary is marked failed until its replica is promoted.
			"--cluster-require-full-coverage", "no",
		)
		c.nodes[r.Addr] = r
		c.Seeds = append(c.Seeds, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Seeds...)
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitConverged(tb)
	return c
}

// ClientOption returns a ClientOption on the cluster's seeds.
func (c *Cluster) ClientOption() rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: c.Seeds}
}

// Client returns a cluster client built from ClientOption with mutate (may be
// nil) applied, closed at cleanup.
func (c *Cluster) Client(tb testing.TB, mutate func(*rueidis.ClientOption)) rueidis.Client {
	tb.Helper()
	opt := c.ClientOption()
	if mutate != nil {
		mutate(&opt)
	}
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("redistest: cluster client for %v: %v", c.Seeds, err)
	}
	tb.Cleanup(rdb.Close)
	return rdb
}

// Node returns the process at addr (KindProcess only), or nil.
func (c *Cluster) Node(addr string) *Redis { return c.nodes[addr] }

// do runs one command on the node at addr through a plain (non-cluster)
// client of its own.
func (c *Cluster) do(ctx context.Context, addr string, args ...string) rueidis.RedisResult {
	c.mu.Lock()
	rdb := c.admins[addr]
	if rdb == nil {
		var err error
		rdb, err = rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true,
			DisableCache:      true,
			DisableRetry:      true,
		})
		if err != nil {
			c.mu.Unlock()
			return rueidis.NewErrorResult(err)
		}
		c.admins[addr] = rdb
	}
	c.mu.Unlock()
	return rdb.Do(ctx, rdb.B().Arbitrary(args...).Build())
}

// Do runs one command on the node at addr (not redirected), bounded by 5 s.
func (c *Cluster) Do(tb testing.TB, addr string, args ...string) rueidis.RedisResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.do(ctx, addr, args...)
}

func (c *Cluster) closeAdmins() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, rdb := range c.admins {
		rdb.Close()
		delete(c.admins, addr)
	}
}

// live returns the addresses of the nodes that answer PING: every process
// not killed or stopped, or the seeds of an env cluster with the nodes they
// know of.
func (c *Cluster) live(tb testing.TB) []string {
	tb.Helper()
	var addrs []string
	if c.Kind == KindProcess {
		for addr, r := range c.nodes {
			r.mu.Lock()
			running := r.proc != nil && !r.paused
			r.mu.Unlock()
			if running && redisnet.PingWithin(addr, time.Second) == nil {
				addrs = append(addrs, addr)
			}
		}
		return addrs
	}
	for _, n := range c.view(tb, c.Seeds[0]).nodes {
		if !n.failed && redisnet.PingWithin(n.addr, time.Second) == nil {
			addrs = append(addrs, n.addr)
		}
	}
	return addrs
}

// needProcesses skips or fails (FAIRRW_REQUIRE_REDIS=1) unless the cluster
// was started here: the fault methods kill and reconfigure its nodes.
func (c *Cluster) needProcesses(tb testing.TB, method string) {
	tb.Helper()
	if c.Kind != KindProcess {
		unavailable(tb, requireRedis(), EnvRequireRedis,
			"Cluster.%s needs a cluster started by redistest, this one is %s=%v", method, EnvCluster, c.Seeds)
	}
}
