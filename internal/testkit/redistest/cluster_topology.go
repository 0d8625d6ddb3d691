package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr string
	master   bool
	masterID string // of a replica
	failed   bool   // flagged fail or fail? by the node that answered
	myself   bool
	slots    [][2]int // owned ranges, inclusive
	moving   bool     // a slot of it is MIGRATING or IMPORTING
}

// clusterView is what one node believes the cluster looks like.
type clusterView struct{ nodes []clusterNode }

// view reads CLUSTER NODES from the node at addr.
func (c *Cluster) view(tb testing.TB, addr string) clusterView {
	tb.Helper()
	v, err := c.readView(addr)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return v
}

func (c *Cluster) readView(addr string) (clusterView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	text, err := c.do(ctx, addr, "CLUSTER", "NODES").ToString()
	if err != nil {
		return clusterView{}, fmt.Errorf("CLUSTER NODES on %s: %w", addr, err)
	}
	return parseClusterNodes(text), nil
}

// parseClusterNodes parses CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
//
// Slot entries in brackets are migrations in progress, not ownership.
func parseClusterNodes(text string) clusterView {
	var v clusterView
	// RESP3 sends CLUSTER NODES as a verbatim string, which rueidis returns
	// with its format prefix.
	text = strings.TrimPrefix(text, "txt:")
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := strings.Split(f[2], ",")
		n := clusterNode{
			id:       f[0],
			addr:     addr,
			master:   slices.Contains(flags, "master"),
			failed:   slices.Contains(flags, "fail") || slices.Contains(flags, "fail?") || slices.Contains(flags, "noaddr"),
			myself:   slices.Contains(flags, "myself"),
			masterID: strings.TrimPrefix(f[3], "-"),
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				n.moving = true
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 == nil && err2 == nil {
				n.slots = append(n.slots, [2]int{a, b})
			}
		}
		v.nodes = append(v.nodes, n)
	}
	return v
}

// owner returns the primary that owns slot in this view.
func (v clusterView) owner(slot int) (clusterNode, bool) {
	for _, n := range v.nodes {
		if !n.master {
			continue
		}
		for _, r := range n.slots {
			if r[0] <= slot && slot <= r[1] {
				return n, true
			}
		}
	}
	return clusterNode{}, false
}

func (v clusterView) self() clusterNode {
	for _, n := range v.nodes {
		if n.myself {
			return n
		}
	}
	return clusterNode{}
}

// replicasOf returns the addresses of the healthy replicas of a primary.
func (v clusterView) replicasOf(id string) []string {
	var out []string
	for _, n := range v.nodes {
		if !n.master && n.masterID == id && !n.failed {
			out = append(out, n.addr)
		}
	}
	return out
}

// slotMap renders who owns which slots, to compare views.
func (v clusterView) slotMap() string {
	var parts []string
	for _, n := range v.nodes {
		if !n.master {
			continue
		}
		for _, r := range n.slots {
			parts = append(parts, fmt.Sprintf("%05d-%05d=%s", r[0], r[1], n.addr))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// PrimaryOf returns the address of the primary that owns slot, as the
// cluster's live nodes agree on it.
func (c *Cluster) PrimaryOf(tb testing.TB, slot int) string {
	tb.Helper()
	c.WaitConverged(tb)
	n, ok := c.view(tb, c.live(tb)[0]).owner(slot)
	if !ok {
		tb.Fatalf("redistest: no primary owns slot %d", slot)
	}
	return n.addr
}

// Primaries returns the addresses of the live primaries.
func (c *Cluster) Primaries(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, addr := range c.live(tb) {
		if c.view(tb, addr).self().master {
			out = append(out, addr)
		}
	}
	slices.Sort(out)
	return out
}

// ReplicaOf returns the address of a healthy replica of the primary at addr.
func (c *Cluster) ReplicaOf(tb testing.TB, primary string) string {
	tb.Helper()
	v := c.view(tb, primary)
	replicas := v.replicasOf(v.self().id)
	if len(replicas) == 0 {
		tb.Fatalf("redistest: primary %s has no healthy replica", primary)
	}
	return replicas[0]
}

// WaitConverged waits until every live node reports cluster_state:ok, all of
// them agree on which primary owns each slot, none sees a primary without
// slots (a node that is not yet a replica), no slot is being migrated, and
// every live replica's replication link is up.
func (c *Cluster) WaitConverged(tb testing.TB) {
	tb.Helper()
	c.waitFor(tb, "the cluster to converge", c.converged)
}

func (c *Cluster) converged(tb testing.TB) error {
	var first string
	live := c.live(tb)
	for _, addr := range live {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := c.do(ctx, addr, "CLUSTER", "INFO").ToString()
		cancel()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", addr)
		}
		v, err := c.readView(addr)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(v.nodes, func(n clusterNode) bool { return n.moving }) {
			return fmt.Errorf("%s: a slot migration is in progress", addr)
		}
		for _, n := range v.nodes {
			if n.failed && slices.Contains(live, n.addr) {
				return fmt.Errorf("%s still flags %s as failed", addr, n.addr)
			}
			if n.master && len(n.slots) == 0 && !n.failed {
				return fmt.Errorf("%s sees %s as a primary without slots (not yet a replica)", addr, n.addr)
			}
		}
		m := v.slotMap()
		if first == "" {
			first = m
		} else if m != first {
			return fmt.Errorf("%s disagrees on the slots:\n  %s\nvs\n  %s", addr, m, first)
		}
		if self := v.self(); !self.master {
			if err := c.replicaInSync(addr); err != nil {
				return err
			}
		}
	}
	if first == "" {
		return fmt.Errorf("no live node")
	}
	return nil
}

func (c *Cluster) replicaInSync(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.do(ctx, addr, "INFO", "replication").ToString()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return fmt.Errorf("replica %s: replication link not up", addr)
	}
	return nil
}

// waitFor polls cond until it returns nil, failing the test after
// clusterTimeout with cond's last error.
func (c *Cluster) waitFor(tb testing.TB, what string, cond func(testing.TB) error) {
	tb.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		err := cond(tb)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: waited %v for %s: %v", clusterTimeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
