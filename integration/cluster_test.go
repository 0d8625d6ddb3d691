package integration

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

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/redistest"
)

// startCluster starts three redis-server primaries with cluster mode on and
// joins them with redis-cli --cluster create. It returns their addresses.
func startCluster(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		if os.Getenv(redistest.EnvRequireRedis) == "1" {
			t.Fatal("redis-cli not on PATH: install redis-tools")
		}
		t.Skip("redis-cli not on PATH") // .ci/run installs redis-tools with redis-server
	}
	var addrs []string
	for range 3 {
		r := redistest.StartProcess(t, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
		addrs = append(addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		for {
			info, _ := exec.Command("redis-cli", "-h", strings.Split(a, ":")[0], "-p", strings.Split(a, ":")[1], "cluster", "info").Output()
			if strings.Contains(string(info), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ok on %s:\n%s", a, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return addrs
}

// TestCluster: locks whose names spread over every shard, with and without
// hash tags, are taken, waited for, renewed and released on a 3-primary
// cluster with no CROSSSLOT error, publishing with SPUBLISH as Java does.
func TestCluster(t *testing.T) {
	addrs := startCluster(t)
	newClusterClient := func(opts ...fairrw.Option) *fairrw.Client {
		c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(rueidis.ClientOption{InitAddress: addrs})}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	const lease = 900 * time.Millisecond
	c1, c2 := newClusterClient(fairrw.WithLeaseTime(lease)), newClusterClient()

	names := []string{"{tenant-1}:a", "{tenant-1}:b", "orders:{t}:42", "ünï:名前"}
	for i := range 20 {
		names = append(names, fmt.Sprintf("cluster:lock:%d", i))
	}
	var leases []*fairrw.Lease
	for i, n := range names {
		mode := fairrw.Write
		if i%2 == 0 {
			mode = fairrw.Read
		}
		leases = append(leases, mustLock(t, c1.RWMutex(n), mode))
	}
	// Waiters in another client, one per lock, woken by sharded pub/sub.
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := c2.RWMutex(n).Lock(ctx)
			if err == nil {
				if l.WokenBy() == "timer" {
					err = fmt.Errorf("%s: waiter woken by the PTTL timer, not by the release", n)
				}
				if uerr := l.Unlock(ctx); err == nil {
					err = uerr
				}
			}
			errs <- err
		}()
	}
	time.Sleep(3 * lease) // the watchdog renews every shard's batch meanwhile
	for _, l := range leases {
		alive := l.Err() == nil
		if !alive {
			t.Fatalf("%s lost on the cluster: %v", l.Name(), l.Err())
		}
		mustUnlock(t, l)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Java publishes with SPUBLISH on a Redis 7+ cluster; so must we.
	spublish, publish := 0, 0
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		stats, err := exec.Command("redis-cli", "-h", host, "-p", port, "info", "commandstats").Output()
		if err != nil {
			t.Fatal(err)
		}
		spublish += commandCalls(string(stats), "spublish")
		publish += commandCalls(string(stats), "publish")
	}
	if spublish == 0 || publish != 0 {
		t.Fatalf("releases used SPUBLISH %d times and PUBLISH %d times; want only SPUBLISH", spublish, publish)
	}
}

// commandCalls reads "cmdstat_<cmd>:calls=N,..." from INFO commandstats.
func commandCalls(info, cmd string) int {
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			var n int
			fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return 0
}
