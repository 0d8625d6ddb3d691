package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// clusterFault is the setup every cluster fault test shares: a fresh
// cluster of 3 primaries with a replica each, the lock under test ("victim",
// hash-tagged so that the load can put a second lock in its slot), a holder
// Client and a waiter Client.
type clusterFault struct {
	c              *redistest.Cluster
	victim         string
	slot           int
	holder, waiter *fairrw.Client
	loadNames      []string
}

func newClusterFault(t *testing.T, p fairrw.Policy, opts ...fairrw.Option) *clusterFault {
	t.Helper()
	c := redistest.StartClusterProcesses(t, 3, 1)
	f := &clusterFault{c: c, victim: "{victim}:" + p.String(), slot: int(slot.Of("{victim}"))}
	opts = append([]fairrw.Option{fairrw.WithPolicy(p)}, opts...)
	f.holder = itest.NewClusterClient(t, c, itest.Transports[0], opts...)
	f.waiter = itest.NewClusterClient(t, c, itest.Transports[1], opts...)
	// One load lock in the victim's slot, the others spread over the shards.
	f.loadNames = []string{"{victim}:load"}
	for i := range 5 {
		f.loadNames = append(f.loadNames, fmt.Sprintf("cluster:fault:%d", i))
	}
	return f
}

// startLoad runs the checked load in the background until ctx ends; wait
// returns what it saw once it has been checked.
func (f *clusterFault) startLoad(t *testing.T, ctx context.Context, failover bool, opts ...fairrw.Option) (wait func() itest.Exclusive) {
	t.Helper()
	clients := []*fairrw.Client{
		itest.NewClusterClient(t, f.c, itest.Transports[0], opts...),
		itest.NewClusterClient(t, f.c, itest.Transports[2], opts...),
	}
	done := make(chan itest.Exclusive, 1)
	go func() {
		done <- itest.RunLoad(t, ctx, itest.Load{Clients: clients, Names: f.loadNames, Workers: 12, Failover: failover})
	}()
	return func() itest.Exclusive { return <-done }
}

// waitFor starts a Lock of the victim in the waiter Client.
func (f *clusterFault) waitFor(mode fairrw.Mode) <-chan itest.LockResult {
	ch := make(chan itest.LockResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		m := f.waiter.RWMutex(f.victim)
		var l *fairrw.Lease
		var err error
		if mode == fairrw.Write {
			l, err = m.Lock(ctx)
		} else {
			l, err = m.RLock(ctx)
		}
		ch <- itest.LockResult{L: l, Err: err, At: time.Now()}
	}()
	return ch
}

// handOver releases held and checks that the waiter gets the lock, woken by
// the release (its message, or the re-made subscription, or an
// invalidation), not by the PTTL timer: the holder's lease is 30 s, far
// beyond the wait allowed here.
func (f *clusterFault) handOver(t *testing.T, held *fairrw.Lease, waiting <-chan itest.LockResult) {
	t.Helper()
	select {
	case r := <-waiting:
		t.Fatalf("the waiter got %v, %v while the lock was held", r.L, r.Err)
	default:
	}
	f.subscribedInShard(t)
	itest.MustUnlock(t, held)
	select {
	case r := <-waiting:
		if r.Err != nil {
			t.Fatalf("the waiter failed: %v", r.Err)
		}
		if hidden.WokenBy(r.L) == "timer" {
			t.Fatalf("the waiter was woken by its PTTL timer: the release did not reach it")
		}
		t.Logf("the waiter was woken by %s", hidden.WokenBy(r.L))
		itest.MustUnlock(t, r.L)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter was not granted within 15s of the release")
	}
}

// redirects counts the ASK and TRYAGAIN answers of every primary (INFO
// errorstats).
func (f *clusterFault) redirects(t *testing.T) int {
	t.Helper()
	n := 0
	for _, p := range f.c.Primaries(t) {
		n += errorCount(t, f.c, p, "ASK") + errorCount(t, f.c, p, "TRYAGAIN")
	}
	return n
}

// subscribedInShard waits until a node of the shard that owns the victim's
// slot now has a sharded subscription to the victim's channel. After a
// migration that is the new owner: the source dropped the subscription when
// the slot left it, and the waiter made it again. After a failover Redis 7.0
// may keep it on the demoted primary, which as a replica of the same shard
// still receives the shard's messages.
func (f *clusterFault) subscribedInShard(t *testing.T) {
	t.Helper()
	owner := f.c.PrimaryOf(t, f.slot)
	nodes := []string{owner, f.c.ReplicaOf(t, owner)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seen []string
		for _, n := range nodes {
			channels, err := f.c.Do(t, n, "PUBSUB", "SHARDCHANNELS").AsStrSlice()
			if err != nil {
				t.Fatalf("PUBSUB SHARDCHANNELS on %s: %v", n, err)
			}
			for _, ch := range channels {
				if strings.Contains(ch, f.victim) {
					return
				}
			}
			seen = append(seen, channels...)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sharded subscription to %s's channel in its shard %v: %v", f.victim, nodes, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noStuckHolds checks that no lock of the test is held any more: no key of
// the victim, the load's locks or extra is left but last fencing tokens and
// owner markers with a TTL (locktest.EventuallyNoKeys, listing keys on every
// primary). An unlock latch whose deletion met the fault (a MOVED slot, a
// dead primary) is no hold: it is left to expire first (its TTL is the
// accept window, twice the unlock timeout).
func (f *clusterFault) noStuckHolds(t *testing.T, extra ...string) {
	t.Helper()
	env := locktest.Env{Raw: f.c.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true }), Keys: f.c.Keys}
	names := append(append([]string{f.victim}, f.loadNames...), extra...)
	deadline := time.Now().Add(2*hidden.UnlockTimeout + 2*time.Second)
	for latches := true; latches; {
		latches = false
		for _, k := range f.c.Keys(t) {
			for _, name := range names {
				latches = latches || strings.HasPrefix(k, compat.UnlockLatchPrefix+":") && strings.Contains(k, name)
			}
		}
		if latches && time.Now().After(deadline) {
			t.Fatalf("unlock latches left past their TTL")
		}
		if latches {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, name := range names {
		locktest.EventuallyNoKeys(t, env, name)
	}
}

// TestClusterFaultFailover: CLUSTER FAILOVER of the shard that holds a
// lock, under load. The holder's watchdog lease survives (a manual failover
// first lets the replica catch up), the waiter's sharded subscription,
// dropped by the failover, is made again and the release wakes it, and the
// load sees no error and no violation.
func TestClusterFaultFailover(t *testing.T) {
	heldThrough(t, "failover", func(t *testing.T, f *clusterFault) {
		from, to := f.c.Failover(t, f.slot)
		t.Logf("slot %d failed over from %s to %s", f.slot, from, to)
	})
}

// TestClusterFaultMigration: the slot of a held lock is migrated live to
// another primary under load, the keys moved in small MIGRATE batches so that
// a lock's keys are split between the nodes for a while. Commands on the
// slot meanwhile get ASK and TRYAGAIN, which are followed and retried: the
// load sees no error (no CROSSSLOT) and no violation, the holder's lease is
// renewed across the move, and the waiter, whose sharded subscription the
// source dropped when the slot left, is woken by the release.
func TestClusterFaultMigration(t *testing.T) {
	heldThrough(t, "migration", func(t *testing.T, f *clusterFault) {
		var target string
		for _, addr := range f.c.Primaries(t) {
			if addr != f.c.PrimaryOf(t, f.slot) {
				target = addr
				break
			}
		}
		before := f.redirects(t)
		m := f.c.BeginMigration(t, f.slot, target)
		time.Sleep(300 * time.Millisecond) // the load meets MIGRATING/IMPORTING
		m.MoveKeys(t)
		time.Sleep(300 * time.Millisecond) // and the keys on the target
		moved := m.Finish(t)
		redirects := f.redirects(t) - before
		t.Logf("slot %d migrated from %s to %s: %d keys; Redis answered ASK or TRYAGAIN %d times", f.slot, m.From(), m.To(), moved, redirects)
		if redirects == 0 {
			t.Fatal("no ASK or TRYAGAIN during the migration: the load did not meet it")
		}
		if got := f.c.PrimaryOf(t, f.slot); got != target {
			t.Fatalf("slot %d on %s after the migration, want %s", f.slot, got, target)
		}
	})
}

// heldThrough runs fault, for every policy, while the victim is held for
// writing by a watchdog lease, a waiter waits for it, and the checked load
// runs. After the fault: the load saw no error and no violation, the lease
// is still held (and still excludes), the release wakes the waiter through
// a subscription in the victim's shard, and no hold is left.
func heldThrough(t *testing.T, what string, fault func(*testing.T, *clusterFault)) {
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			f := newClusterFault(t, p)
			held := itest.MustLock(t, f.holder.RWMutex(f.victim), fairrw.Write)
			waiting := f.waitFor(fairrw.Write)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			wait := f.startLoad(t, ctx, false, fairrw.WithPolicy(p))

			time.Sleep(time.Second)
			fault(t, f)
			x := wait()
			if x.Grants < 50 {
				t.Fatalf("only %d grants under the %s", x.Grants, what)
			}
			if err := held.Err(); err != nil {
				t.Fatalf("the holder's lease was lost in the %s: %v", what, err)
			}
			if _, err := f.waiter.RWMutex(f.victim).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryLock of the held lock after the %s: %v, want ErrNotAcquired", what, err)
			}
			f.handOver(t, held, waiting)
			f.noStuckHolds(t)
			t.Logf("%d grants (%d writes, %d ops checked) across the %s", x.Grants, x.Writes, x.Ops, what)
		})
	}
}

// TestClusterFaultKillPrimary: kill -9 of the primary that holds a lock,
// with leases on every shard. The dead shard's leases are reported lost
// (its replica takes over only after the 2 s node timeout, beyond their
// 1.5 s lease), while the leases on the other shards are renewed on: one
// dead shard must not cost the others their leases. After the takeover the
// lock's waiter is granted, and a checked load running through it with
// WithSyncReplicas (so that no acknowledged grant is lost with the primary)
// sees no violation.
func TestClusterFaultKillPrimary(t *testing.T) {
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			const lease = 1500 * time.Millisecond
			f := newClusterFault(t, p, fairrw.WithLeaseTime(lease))
			var leases []*fairrw.Lease
			for _, n := range append(itest.ClusterNames(20), f.victim) {
				leases = append(leases, itest.MustLock(t, f.holder.RWMutex(n), fairrw.Write))
			}
			dead := f.c.PrimaryOf(t, f.slot)
			onDead := make(map[*fairrw.Lease]bool)
			for _, l := range leases {
				onDead[l] = f.c.PrimaryOf(t, int(slot.Of(hidden.Name(l)))) == dead
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The load's leases are short too, so that a hold whose Unlock
			// could not reach the dead shard runs out within the check below.
			wait := f.startLoad(t, ctx, true, fairrw.WithPolicy(p), fairrw.WithSyncReplicas(1, time.Second), fairrw.WithLeaseTime(3*time.Second))

			waiting := f.waitFor(fairrw.Write) // behind the victim's holder

			time.Sleep(time.Second)
			late := lateness.Start(t)
			margin := watchMargin(t, leases, onDead)
			killed, promoted := f.c.KillPrimary(t, f.slot)
			t.Logf("killed %s; %s took over slot %d", killed, promoted, f.slot)

			var wg sync.WaitGroup
			for _, l := range leases {
				if onDead[l] {
					wg.Go(func() { itest.AwaitLost(t, l, 10*time.Second) })
				}
			}
			wg.Wait()
			// A live shard's renewals are answered as they come, whatever
			// the dead shard's calls do: each live lease keeps what a
			// round leaves it (lease - interval), not half of it. (Held
			// back, it keeps about lease - 2 intervals: this bound tells
			// that apart while the control's worst stays under a quarter
			// interval; beside CPU burners the check above, no live lease
			// lost, is the one left to tell.)
			least := margin()
			interval := lease / 3
			t.Logf("the smallest margin left to a live shard's lease: %v (a lease of %v renewed every %v)", least, lease, interval)
			late.WithinWaits("a live shard's lease margin short of lease - interval", lease-interval-least, interval/2, 2)
			for _, l := range leases {
				if !onDead[l] {
					if err := l.Err(); err != nil {
						t.Errorf("lease %s on a live shard was lost: %v", hidden.Name(l), err)
					} else {
						itest.MustUnlock(t, l)
					}
				}
			}
			// The waiter's subscription died with the primary: it is granted
			// by its retries (PTTL bound, re-made subscription) once the
			// replica serves and the lost hold has run out.
			select {
			case r := <-waiting:
				if r.Err != nil {
					t.Fatalf("the waiter behind the dead shard failed: %v", r.Err)
				}
				t.Logf("the waiter was granted after the takeover, woken by %s", hidden.WokenBy(r.L))
				itest.MustUnlock(t, r.L)
			case <-time.After(15 * time.Second):
				t.Fatal("the waiter behind the dead shard was not granted within 15s")
			}

			x := wait()
			if x.Grants < 50 {
				t.Fatalf("only %d grants around the kill", x.Grants)
			}
			f.noStuckHolds(t, itest.ClusterNames(20)...)
			t.Logf("%d grants (%d writes, %d ops checked) around the kill", x.Grants, x.Writes, x.Ops)
		})
	}
}

// TestClusterTryAgainWithoutRueidisRetry: with rueidis's own retries off
// (DisableRetry), a lock whose slot is half migrated is answered TRYAGAIN
// (its keys are on neither node in full). fairrw retries such refusals
// itself, with the same attempt id: the acquire waits out the migration and
// succeeds, and the lock it took is exclusive on the target.
func TestClusterTryAgainWithoutRueidisRetry(t *testing.T) {
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			c := redistest.StartClusterProcesses(t, 3, 0)
			noRetry := itest.Transport{Name: "no-rueidis-retry", Mutate: func(o *rueidis.ClientOption) { o.DisableRetry = true }}
			fc := itest.NewClusterClient(t, c, noRetry, fairrw.WithPolicy(p))
			name := "{tryagain}:" + p.String()
			s := int(slot.Of(name))
			itest.MustUnlock(t, itest.MustLock(t, fc.RWMutex(name), fairrw.Write)) // leaves the fencing counter

			var target string
			for _, addr := range c.Primaries(t) {
				if addr != c.PrimaryOf(t, s) {
					target = addr
					break
				}
			}
			before := 0
			for _, addr := range c.Primaries(t) {
				before += errorCount(t, c, addr, "TRYAGAIN")
			}
			m := c.BeginMigration(t, s, target)
			m.MoveKeys(t) // the fencing counter is on the target, the rest nowhere: TRYAGAIN
			got := make(chan itest.LockResult, 1)
			go func() {
				l, err := fc.RWMutex(name).Lock(itest.TestCtx(t))
				got <- itest.LockResult{L: l, Err: err}
			}()
			time.Sleep(500 * time.Millisecond)
			select {
			case r := <-got:
				t.Fatalf("Lock returned during the migration: %v, %v", r.L, r.Err)
			default:
			}
			m.Finish(t)
			r := <-got
			if r.Err != nil {
				t.Fatalf("Lock across the migration: %v", r.Err)
			}
			after := 0
			for _, addr := range c.Primaries(t) {
				after += errorCount(t, c, addr, "TRYAGAIN")
			}
			if after == before {
				t.Fatal("Redis answered no TRYAGAIN: the test did not reach the case")
			}
			other := itest.NewClusterClient(t, c, itest.Transports[0], fairrw.WithPolicy(p))
			if _, err := other.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryLock of the lock taken across the migration: %v, want ErrNotAcquired", err)
			}
			itest.MustUnlock(t, r.L)
			t.Logf("Lock waited out the migration through %d TRYAGAIN answers", after-before)
		})
	}
}

// errorCount reads errorstat_<name>:count from INFO errorstats of the node at addr.
func errorCount(t *testing.T, c *redistest.Cluster, addr, name string) int {
	t.Helper()
	stats, err := c.Do(t, addr, "INFO", "errorstats").ToString()
	if err != nil {
		t.Fatalf("INFO errorstats on %s: %v", addr, err)
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(redisinfo.Field(stats, "errorstat_"+name), "count="))
	return n
}

// watchMargin samples, every 5 ms until the returned func is called (or
// t ends), how long the leases not onDead have left before their
// deadlines, and the func returns the least seen.
func watchMargin(t *testing.T, leases []*fairrw.Lease, onDead map[*fairrw.Lease]bool) (least func() time.Duration) {
	stop, done := make(chan struct{}), make(chan time.Duration, 1)
	var once sync.Once
	end := func() { once.Do(func() { close(stop) }) }
	t.Cleanup(end)
	go func() {
		least := time.Duration(1<<63 - 1)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, l := range leases {
				if !onDead[l] && l.Err() == nil {
					least = min(least, time.Until(l.Deadline()))
				}
			}
			select {
			case <-tick.C:
			case <-stop:
				done <- least
				return
			}
		}
	}()
	return func() time.Duration { end(); return <-done }
}

// TestClusterFaultPausedPrimary: a primary frozen (SIGSTOP, no replica to
// take over) keeps its connections open and answers nothing, so a
// renewal's calls to it wait for their context to end, where a killed
// one's are refused. The frozen shard's leases are lost by their
// deadlines; every other shard's are confirmed as their answers come,
// keeping a lease less an interval (judged as TestClusterFaultKillPrimary
// judges it), and live on after the primary thaws.
func TestClusterFaultPausedPrimary(t *testing.T) {
	c := redistest.StartClusterProcesses(t, 3, 0)
	const lease = 1500 * time.Millisecond
	fc := itest.NewClusterClient(t, c, itest.Transports[0], fairrw.WithLeaseTime(lease))
	names := itest.ClusterNames(20)
	frozen := c.PrimaryOf(t, int(slot.Of(names[0])))
	var leases []*fairrw.Lease
	onFrozen := make(map[*fairrw.Lease]bool)
	for _, n := range names {
		l := itest.MustLock(t, fc.RWMutex(n), fairrw.Write)
		leases = append(leases, l)
		onFrozen[l] = c.PrimaryOf(t, int(slot.Of(n))) == frozen
	}
	// Two rounds first: the renewer takes its view of the shards after
	// the first, so that the frozen shard's slots share one DoMulti.
	time.Sleep(2 * lease / 3)
	late := lateness.Start(t)
	margin := watchMargin(t, leases, onFrozen)
	c.Node(frozen).Pause(t)
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			c.Node(frozen).Resume(t)
		}
	}
	defer thaw()
	var wg sync.WaitGroup
	for _, l := range leases {
		if onFrozen[l] {
			wg.Go(func() { itest.AwaitLost(t, l, 3*lease) })
		}
	}
	wg.Wait()
	time.Sleep(lease / 3) // one more round with the shard frozen
	least := margin()
	thaw()
	interval := lease / 3
	t.Logf("the smallest margin left to a live shard's lease with %s frozen: %v (a lease of %v renewed every %v)", frozen, least, lease, interval)
	late.WithinWaits("a live shard's lease margin short of lease - interval, a primary frozen", lease-interval-least, interval/2, 2)
	live := 0
	for _, l := range leases {
		if onFrozen[l] {
			continue
		}
		live++
		if err := l.Err(); err != nil {
			t.Errorf("lease %s on a live shard was lost: %v", hidden.Name(l), err)
			continue
		}
		itest.MustUnlock(t, l)
	}
	if live == 0 || live == len(leases) {
		t.Fatalf("%d of %d leases on live shards: the test did not reach the case", live, len(leases))
	}
}
