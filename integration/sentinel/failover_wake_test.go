package sentinel

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// failoverWakeBound is the longest a waiter may stay asleep on a free lock
// after a failover of its shard: the library bounds it at 1 s (a lost
// message makes a waiter's group check the lock again within that), the
// test allows some slack for a loaded machine.
const failoverWakeBound = 1500 * time.Millisecond

// TestFailoverWake: a lock is held in Client A, with writers and readers
// waiting in A itself and in Clients B and C; its shard fails over (CLUSTER
// FAILOVER on the replica, which drops the waiters' sharded subscriptions:
// they are made again, possibly through a stale slot map on the demoted
// primary, which receives the shard's messages only once the new primary
// knows it as its replica), then the lock is released. Every waiter must be
// granted within failoverWakeBound of the lock becoming free for it (of the
// last release before its grant), not by its PTTL timer (a third of the
// lease, or the whole lease under the Redisson policy). Three failovers,
// back and forth, for every policy.
func TestFailoverWake(t *testing.T) {
	c := redistest.StartClusterProcesses(t, 3, 1)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			name := "{failover-wake}:" + p.String()
			s := int(slot.Of(name))
			channel := fwire.Fair(name).Channel
			if p.String() == fairrw.Redisson().String() {
				channel = compat.Channel(name)
			}
			clients := map[string]*fairrw.Client{}
			for _, n := range []string{"A", "B", "C"} {
				clients[n] = itest.NewClusterClient(t, c, itest.Transports[0], fairrw.WithPolicy(p))
			}
			for round := 1; round <= 3; round++ {
				failoverWakeRound(t, c, clients, name, channel, s, p.String(), round)
			}
		})
	}
}

// wakeClock records when the lock was last released (the start of the
// last Unlock), so that a grant's latency counts from the moment the lock
// could be its.
type wakeClock struct {
	mu   sync.Mutex
	free time.Time
}

func (w *wakeClock) unlock(t *testing.T, l *fairrw.Lease) {
	t.Helper()
	w.mu.Lock()
	w.free = time.Now()
	w.mu.Unlock()
	if err := l.Unlock(itest.TestCtx(t)); err != nil {
		t.Errorf("unlock: %v", err)
	}
}

func (w *wakeClock) since() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.free)
}

func failoverWakeRound(t *testing.T, c *redistest.Cluster, clients map[string]*fairrw.Client, name, channel string, s int, policy string, round int) {
	t.Helper()
	held := itest.MustLock(t, clients["A"].RWMutex(name), fairrw.Write)
	type waiterSpec struct {
		client string
		mode   fairrw.Mode
	}
	specs := []waiterSpec{
		{"A", fairrw.Write}, {"A", fairrw.Read},
		{"B", fairrw.Write}, {"B", fairrw.Read},
		{"C", fairrw.Read}, {"C", fairrw.Write},
	}
	clock := &wakeClock{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type outcome struct {
		who     string
		latency time.Duration
		woken   string
		err     error
		early   bool // granted before the holder's release
	}
	results := make(chan outcome, len(specs))
	var wg sync.WaitGroup
	defer func() { // a failed round ends its waiters too
		cancel()
		wg.Wait()
	}()
	var relMu sync.Mutex
	isReleased := false
	for _, sp := range specs {
		who := fmt.Sprintf("%s-%s", sp.client, sp.mode)
		wg.Go(func() {
			m := clients[sp.client].RWMutex(name)
			var l *fairrw.Lease
			var err error
			if sp.mode == fairrw.Write {
				l, err = m.Lock(ctx)
			} else {
				l, err = m.RLock(ctx)
			}
			if err != nil {
				results <- outcome{who: who, err: err}
				return
			}
			latency := clock.since()
			relMu.Lock()
			early := !isReleased
			relMu.Unlock()
			results <- outcome{who: who, latency: latency, woken: hidden.WokenBy(l), early: early}
			clock.unlock(t, l)
		})
	}
	// Every Client has subscribed, and every waiter has had its first
	// attempt refused and sleeps.
	waitShardSubscribers(t, c, s, channel, 3)
	time.Sleep(300 * time.Millisecond)

	from, to := failOverFor(t, c, s, round)
	t.Logf("round %d: slot %d failed over from %s to %s", round, s, from, to)

	relMu.Lock()
	isReleased = true
	relMu.Unlock()
	clock.unlock(t, held)
	wg.Wait()
	close(results)
	c.WaitConverged(t)
	var worst time.Duration
	var got []string
	for r := range results {
		switch {
		case r.err != nil:
			t.Errorf("round %d: waiter %s failed: %v", round, r.who, r.err)
			continue
		case r.early:
			t.Errorf("round %d: waiter %s was granted while the lock was held", round, r.who)
		}
		t.Logf("failover-wake: policy=%s round=%d waiter=%s latency=%v woken=%s", policy, round, r.who, r.latency.Round(time.Millisecond), r.woken)
		worst = max(worst, r.latency)
		got = append(got, r.who)
		if r.latency > failoverWakeBound {
			t.Errorf("round %d: waiter %s was granted %v after the lock became free (woken by %s), want within %v",
				round, r.who, r.latency.Round(time.Millisecond), r.woken, failoverWakeBound)
		}
	}
	slices.Sort(got)
	t.Logf("failover-wake: policy=%s round=%d worst=%v granted=%v", policy, round, worst.Round(time.Millisecond), got)
}

// waitShardSubscribers waits until the nodes of the shard that owns slot
// count at least n sharded subscriptions to channel between them.
func waitShardSubscribers(t *testing.T, c *redistest.Cluster, s int, channel string, n int64) {
	t.Helper()
	owner := c.PrimaryOf(t, s)
	nodes := []string{owner, c.ReplicaOf(t, owner)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var total int64
		for _, node := range nodes {
			counts, err := c.Do(t, node, "PUBSUB", "SHARDNUMSUB", channel).ToArray()
			if err != nil || len(counts) != 2 {
				t.Fatalf("PUBSUB SHARDNUMSUB on %s: %v %v", node, counts, err)
			}
			k, _ := counts[1].AsInt64()
			total += k
		}
		if total >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sharded subscriptions to %s in its shard %v, want %d", total, channel, nodes, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failOverFor runs CLUSTER FAILOVER on the replica of slot's primary and
// returns when the lock is to be released: round 1 at once (the release
// meets the handover: the old primary pauses writes, then redirects), round
// 2 as soon as the old primary has given the slot up (it dropped the
// sharded subscriptions, which are made again while the new primary does
// not yet count it as its replica), round 3 once the cluster agrees.
func failOverFor(t *testing.T, c *redistest.Cluster, s, round int) (from, to string) {
	t.Helper()
	from = c.PrimaryOf(t, s)
	to = c.ReplicaOf(t, from)
	// A primary votes for a replica of one primary once per two node
	// timeouts (2 s in redistest): failovers back and forth are spaced.
	if wait := time.Until(lastFailover.Add(4500 * time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	if err := c.Do(t, to, "CLUSTER", "FAILOVER").Error(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", to, err)
	}
	lastFailover = time.Now()
	switch round % 3 {
	case 1:
	case 2:
		deadline := time.Now().Add(10 * time.Second)
		for {
			role, err := c.Do(t, from, "ROLE").ToArray()
			if err == nil && len(role) > 0 {
				if r, _ := role[0].ToString(); r == "slave" {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still a primary 10s after CLUSTER FAILOVER on %s", from, to)
			}
			time.Sleep(2 * time.Millisecond)
		}
	default:
		c.WaitConverged(t)
		if got := c.PrimaryOf(t, s); got != to {
			t.Fatalf("slot %d on %s after CLUSTER FAILOVER on %s", s, got, to)
		}
	}
	return from, to
}

// lastFailover is when the last CLUSTER FAILOVER was sent (the tests of
// the package run one at a time).
var lastFailover time.Time
