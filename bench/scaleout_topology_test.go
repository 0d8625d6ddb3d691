package bench

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/fairrw/rwlock/internal/wire"
)

// startSingle is one redis-server (or FAIRRW_REDIS_ADDR).
func startSingle(b *testing.B) *scaleTopology {
	r := redistest.Start(b)
	return newTopology(b, r.ClientOption(), r.Kind == redistest.KindProcess, scaleNode{addr: r.Addr, primary: true})
}

// startSingleReplica is one redis-server with a replica: the replication
// cost of cluster-3 without its sharding.
func startSingleReplica(b *testing.B) *scaleTopology {
	p := redistest.StartProcess(b, "--repl-diskless-sync-delay", "0")
	host, port, err := net.SplitHostPort(p.Addr)
	if err != nil {
		b.Fatal(err)
	}
	r := redistest.StartProcess(b, "--replicaof", host, port)
	t := newTopology(b, p.ClientOption(), true, scaleNode{addr: p.Addr, primary: true}, scaleNode{addr: r.Addr})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(t.info(b, t.nodes[1], "replication"), "master_link_status:up") {
		if time.Now().After(deadline) {
			b.Fatalf("replica %s not in sync with %s after 30s", r.Addr, p.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return t
}

// startClusterOne is one redis-server in cluster mode owning every slot:
// the cost of cluster mode without its sharding.
func startClusterOne(b *testing.B) *scaleTopology {
	r := redistest.StartProcess(b, "--cluster-enabled", "yes")
	t := newTopology(b, r.ClientOption(), true, scaleNode{addr: r.Addr, primary: true})
	n := t.nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.rdb.Do(ctx, n.rdb.B().Arbitrary("CLUSTER", "ADDSLOTSRANGE", "0", strconv.Itoa(slot.Count-1)).Build()).Error(); err != nil {
		b.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %v", r.Addr, err)
	}
	for {
		info, err := n.rdb.Do(ctx, n.rdb.B().Arbitrary("CLUSTER", "INFO").Build()).ToString()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return t
		}
		if ctx.Err() != nil {
			b.Fatalf("cluster of one node %s not ok after 30s: %v %q", r.Addr, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newClusterTopology lists every node of c, primaries and replicas, from
// CLUSTER NODES.
func newClusterTopology(b *testing.B, c *redistest.Cluster) *scaleTopology {
	text, err := c.Do(b, c.Seeds[0], "CLUSTER", "NODES").ToString()
	if err != nil {
		b.Fatalf("CLUSTER NODES: %v", err)
	}
	var nodes []scaleNode
	for line := range strings.Lines(strings.TrimPrefix(text, "txt:")) {
		f := strings.Fields(line)
		if len(f) < 8 || strings.Contains(f[2], "fail") || strings.Contains(f[2], "noaddr") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		nodes = append(nodes, scaleNode{addr: addr, primary: slices.Contains(strings.Split(f[2], ","), "master")})
	}
	// The Client is given the primaries only: given a replica, rueidis drops
	// its connection on the first topology refresh, 5 s later from a
	// goroutine of its own, which goleak would report at the end of the run.
	opt := c.ClientOption()
	opt.InitAddress = nil
	for _, n := range nodes {
		if n.primary {
			opt.InitAddress = append(opt.InitAddress, n.addr)
		}
	}
	return newTopology(b, opt, c.Kind == redistest.KindProcess, nodes...)
}

// newTopology opens a plain client to every node, closed by b's cleanup.
func newTopology(b *testing.B, opt rueidis.ClientOption, own bool, nodes ...scaleNode) *scaleTopology {
	b.Helper()
	for i := range nodes {
		rdb, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{nodes[i].addr},
			ForceSingleClient: true,
			DisableCache:      true,
		})
		if err != nil {
			b.Fatalf("client for %s: %v", nodes[i].addr, err)
		}
		b.Cleanup(rdb.Close)
		nodes[i].rdb = rdb
	}
	return &scaleTopology{opt: opt, nodes: nodes, own: own}
}

// info reads INFO sections from one node.
func (t *scaleTopology) info(b *testing.B, n scaleNode, sections ...string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := n.rdb.Do(ctx, n.rdb.B().Info().Section(sections...).Build()).ToString()
	if err != nil {
		b.Fatalf("INFO on %s: %v", n.addr, err)
	}
	return info
}

// resetAfter registers a cleanup that logs the keys of this process still
// on the primaries (but the fencing counters, which have no TTL by design)
// and leaves them empty to the next variant, as
// env.checkLeftovers does (FLUSHALL on servers started here, else DEL of
// this process's keys). Register it before creating Clients.
func (t *scaleTopology) resetAfter(b *testing.B) {
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var left []string
		for _, n := range t.nodes {
			if !n.primary {
				continue
			}
			keys, err := scanKeys(ctx, n.rdb, "*"+t.run+"*")
			if err != nil {
				b.Errorf("SCAN on %s: %v", n.addr, err)
			}
			for _, k := range keys {
				if ok, err := expiring(ctx, n.rdb, k); err != nil || !ok { // fences and markers expire by design
					left = append(left, k)
				}
			}
			if t.own {
				err = errors.Join(err, n.rdb.Do(ctx, n.rdb.B().Flushall().Sync().Build()).Error())
			} else {
				for _, k := range keys { // one by one: their slots differ
					err = errors.Join(err, n.rdb.Do(ctx, n.rdb.B().Del().Key(k).Build()).Error())
				}
			}
			if err != nil {
				b.Errorf("reset %s: %v", n.addr, err)
			}
		}
		if len(left) > 0 {
			b.Logf("%d keys left on the primaries after every Client closed, e.g. %q", len(left), left[:min(len(left), 3)])
		}
	})
}

// expiring reports whether key is one of fairrw's keys that stay a bounded
// time after the lock's holds ended (a lock's last fencing token, a given-up
// owner's marker) and has a TTL, so that it vanishes on its own.
func expiring(ctx context.Context, rdb rueidis.Client, key string) (bool, error) {
	fence := strings.HasPrefix(key, wire.FairPrefix+":") && strings.HasSuffix(key, ":fence")
	if !fence && !strings.HasPrefix(key, wire.OwnerMarkerPrefix+":") {
		return false, nil
	}
	ttl, err := rdb.Do(ctx, rdb.B().Pttl().Key(key).Build()).AsInt64()
	return ttl > 0, err
}

func scanKeys(ctx context.Context, rdb rueidis.Client, match string) ([]string, error) {
	var keys []string
	for cursor := uint64(0); ; {
		entry, err := rdb.Do(ctx, rdb.B().Scan().Cursor(cursor).Match(match).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return keys, err
		}
		keys = append(keys, entry.Elements...)
		if cursor = entry.Cursor; cursor == 0 {
			return keys, nil
		}
	}
}
