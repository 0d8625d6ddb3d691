package redistest

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
)

// Failover runs CLUSTER FAILOVER on a replica of the primary that owns slot
// (a clean handover: the replica first catches up with its primary) and
// waits until the whole cluster agrees that the replica owns the slot. It
// returns the old and the new primary.
func (c *Cluster) Failover(tb testing.TB, slot int) (from, to string) {
	tb.Helper()
	c.needProcesses(tb, "Failover")
	from = c.PrimaryOf(tb, slot)
	to = c.ReplicaOf(tb, from)
	if err := c.Do(tb, to, "CLUSTER", "FAILOVER").Error(); err != nil {
		tb.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", to, err)
	}
	c.waitOwner(tb, slot, to)
	return from, to
}

// KillPrimary kills the primary that owns slot with SIGKILL and waits until
// its replica has taken over (after cluster-node-timeout, 2 s, plus the
// election) and the live nodes agree. It returns the killed and the promoted
// node. Writes the replica had not received are lost, as in production.
func (c *Cluster) KillPrimary(tb testing.TB, slot int) (killed, promoted string) {
	tb.Helper()
	c.needProcesses(tb, "KillPrimary")
	killed = c.PrimaryOf(tb, slot)
	promoted = c.ReplicaOf(tb, killed)
	c.nodes[killed].Kill(tb)
	c.waitOwner(tb, slot, promoted)
	return killed, promoted
}

// Revive restarts a node that was killed, with its cluster state file: it
// rejoins as a replica of the primary that replaced it.
func (c *Cluster) Revive(tb testing.TB, addr string) {
	tb.Helper()
	c.needProcesses(tb, "Revive")
	c.nodes[addr].Restart(tb)
	c.WaitConverged(tb)
}

func (c *Cluster) waitOwner(tb testing.TB, slot int, want string) {
	tb.Helper()
	c.waitFor(tb, fmt.Sprintf("%s to own slot %d", want, slot), func(tb testing.TB) error {
		if err := c.converged(tb); err != nil {
			return err
		}
		n, ok := c.view(tb, want).owner(slot)
		if !ok || n.addr != want {
			return fmt.Errorf("slot %d is owned by %q", slot, n.addr)
		}
		return nil
	})
}

// A Migration moves one slot from its primary to another, step by step as
// redis-cli --cluster reshard does, so that a test can run load in between:
// BeginMigration marks the slot IMPORTING on the target and MIGRATING on the
// source; MoveKeys moves the keys it holds now with MIGRATE; Finish moves
// the rest and assigns the slot to the target everywhere.
//
// Meanwhile Redis answers a command on the slot with ASK (keys not on the
// source) or TRYAGAIN (a multi-key command whose keys are split, or not all
// present on the target): clients must follow and retry.
type Migration struct {
	c            *Cluster
	slot         int
	from, to     string
	fromID, toID string
	moved        int
}

// BeginMigration starts moving slot to the primary at to.
func (c *Cluster) BeginMigration(tb testing.TB, slot int, to string) *Migration {
	tb.Helper()
	c.needProcesses(tb, "BeginMigration")
	from := c.PrimaryOf(tb, slot)
	if from == to {
		tb.Fatalf("redistest: slot %d is already on %s", slot, to)
	}
	m := &Migration{c: c, slot: slot, from: from, to: to,
		fromID: c.view(tb, from).self().id, toID: c.view(tb, to).self().id}
	s := strconv.Itoa(slot)
	m.ok(tb, to, "CLUSTER", "SETSLOT", s, "IMPORTING", m.fromID)
	m.ok(tb, from, "CLUSTER", "SETSLOT", s, "MIGRATING", m.toID)
	return m
}

// From is the source of the migration.
func (m *Migration) From() string { return m.from }

// To is the target of the migration.
func (m *Migration) To() string { return m.to }

// MoveKeys moves every key the source holds in the slot now, at most 10 per
// MIGRATE (so that a lock's keys may be split between the two nodes for a
// while, as in a real reshard), and returns how many it moved.
func (m *Migration) MoveKeys(tb testing.TB) int {
	tb.Helper()
	host, port, err := net.SplitHostPort(m.to)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	moved := 0
	for {
		keys, err := m.c.Do(tb, m.from, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.slot), "10").AsStrSlice()
		if err != nil {
			tb.Fatalf("redistest: CLUSTER GETKEYSINSLOT on %s: %v", m.from, err)
		}
		if len(keys) == 0 {
			m.moved += moved
			return moved
		}
		args := append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)
		if err := m.c.Do(tb, m.from, args...).Error(); err != nil {
			tb.Fatalf("redistest: MIGRATE %v from %s to %s: %v", keys, m.from, m.to, err)
		}
		moved += len(keys)
	}
}

// Finish moves the remaining keys and assigns the slot to the target: on the
// target first, then the source, then every other primary, as redis-cli
// does. It waits until the cluster has converged and returns the number of
// keys moved in all.
func (m *Migration) Finish(tb testing.TB) int {
	tb.Helper()
	m.MoveKeys(tb)
	s := strconv.Itoa(m.slot)
	m.ok(tb, m.to, "CLUSTER", "SETSLOT", s, "NODE", m.toID)
	m.ok(tb, m.from, "CLUSTER", "SETSLOT", s, "NODE", m.toID)
	for _, p := range m.c.Primaries(tb) {
		if p != m.from && p != m.to {
			m.ok(tb, p, "CLUSTER", "SETSLOT", s, "NODE", m.toID)
		}
	}
	m.c.waitOwner(tb, m.slot, m.to)
	return m.moved
}

func (m *Migration) ok(tb testing.TB, addr string, args ...string) {
	tb.Helper()
	if err := m.c.Do(tb, addr, args...).Error(); err != nil {
		tb.Fatalf("redistest: %v on %s: %v", args, addr, err)
	}
}

// Keys returns every key stored on the cluster's live primaries.
func (c *Cluster) Keys(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, p := range c.Primaries(tb) {
		keys, err := c.Do(tb, p, "KEYS", "*").AsStrSlice()
		if err != nil {
			tb.Fatalf("redistest: KEYS on %s: %v", p, err)
		}
		out = append(out, keys...)
	}
	slices.Sort(out)
	return out
}
