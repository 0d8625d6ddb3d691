package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// clusterEnv is the behavioural suite's environment on a cluster: keys are
// listed on every primary.
func clusterEnv(t *testing.T, c *redistest.Cluster, tr itest.Transport, policy fairrw.Policy) locktest.Env {
	return locktest.Env{
		Raw:    c.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true }),
		Policy: policy,
		New: func(t testing.TB, opts ...fairrw.Option) *fairrw.Client {
			return itest.NewClusterClient(t, c, tr, opts...)
		},
		Keys: c.Keys,
	}
}

// TestClusterBehaviour runs the whole behavioural suite for every policy on
// a cluster of 3 primaries with a replica each: each policy over one
// transport (tracking, RESP3 without tracking, RESP2: a different one each),
// or over every transport with FAIRRW_LONG=1 (see topologyMatrix).
func TestClusterBehaviour(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	for _, m := range itest.TopologyMatrix() {
		t.Run(m.P.String()+"/"+m.Tr.Name, func(t *testing.T) {
			t.Parallel() // each policy on its own locks, as in TestBehaviour
			env := clusterEnv(t, c, m.Tr, m.P)
			env.Repeat = itest.LongRun() && m.Tr.Name != itest.Transports[0].Name // the policy runs on transports[0] too
			locktest.Run(t, env)
		})
	}
	t.Run("ordering", func(t *testing.T) {
		t.Run("writer-preferring", func(t *testing.T) {
			locktest.RunWriterPreferring(t, clusterEnv(t, c, itest.Transports[0], nil))
		})
		t.Run("phase-fair", func(t *testing.T) { locktest.RunPhaseFair(t, clusterEnv(t, c, itest.Transports[0], nil)) })
	})
}

// TestClusterMutex runs the Mutex suite on a cluster (one transport, beside
// the Redisson read-write lock: the suite runs over every transport on one
// node), then checks that a release wakes a waiter in another Client
// through SPUBLISH, as Java does on a Redis 7+ cluster, and never PUBLISH.
func TestClusterMutex(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	t.Run("suite", func(t *testing.T) {
		locktest.RunMutex(t, clusterEnv(t, c, itest.Transports[0], fairrw.Redisson()))
	})
	c1, c2 := itest.NewClusterClient(t, c, itest.Transports[0]), itest.NewClusterClient(t, c, itest.Transports[0])
	for _, n := range itest.ClusterNames(4) {
		held := itest.MustLockMutex(t, c1.Mutex(n))
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := c2.Mutex(n).Lock(ctx)
			if err == nil {
				if hidden.WokenBy(l) == "timer" {
					err = errors.New(n + ": waiter woken by the PTTL timer, not by the release")
				}
				if uerr := l.Unlock(ctx); err == nil {
					err = uerr
				}
			}
			got <- err
		}()
		time.Sleep(100 * time.Millisecond)
		itest.MustUnlock(t, held)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	wantOnlySPublish(t, c)
}

// TestCluster: locks whose names spread over every shard, with and without
// hash tags, are taken, renewed and released on the cluster with no
// CROSSSLOT error, publishing with SPUBLISH as Java does; waiters in
// another Client are woken by the release, not by the PTTL timer. The
// holds that the waiters wait on have the default lease (30 s), so their
// timers are far off when the release comes: with a short lease a loaded
// machine lets a timer fire between a release and its message, and the
// check would say nothing of the subscriptions. The renewals run on short
// leases before.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	const lease = 900 * time.Millisecond
	c1 := itest.NewClusterClient(t, c, itest.Transports[0], fairrw.WithLeaseTime(lease))
	c2, c3 := itest.NewClusterClient(t, c, itest.Transports[0]), itest.NewClusterClient(t, c, itest.Transports[0])

	names := itest.ClusterNames(20)
	mode := func(i int) fairrw.Mode {
		if i%2 == 0 {
			return fairrw.Read
		}
		return fairrw.Write
	}
	var leases []*fairrw.Lease
	for i, n := range names {
		leases = append(leases, itest.MustLock(t, c1.RWMutex(n), mode(i)))
	}
	time.Sleep(3 * lease) // the watchdog renews every shard's batch meanwhile
	for _, l := range leases {
		if err := l.Err(); err != nil {
			t.Fatalf("%s lost on the cluster: %v", hidden.Name(l), err)
		}
		itest.MustUnlock(t, l)
	}

	leases = leases[:0]
	for i, n := range names {
		leases = append(leases, itest.MustLock(t, c3.RWMutex(n), mode(i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second) // within the holds' lease: a missed release fails
			defer cancel()
			l, err := c2.RWMutex(n).Lock(ctx)
			if err == nil {
				if hidden.WokenBy(l) == "timer" {
					err = fmt.Errorf("%s: waiter woken by the PTTL timer, not by the release", n)
				}
				if uerr := l.Unlock(ctx); err == nil {
					err = uerr
				}
			}
			errs <- err
		})
	}
	time.Sleep(time.Second) // the waiters subscribe
	for _, l := range leases {
		itest.MustUnlock(t, l)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Java publishes with SPUBLISH on a Redis 7+ cluster; so must we.
	wantOnlySPublish(t, c)
}

// TestClusterRenewalRound: leases on every shard are renewed by one round
// (one "fairrw.renew" span) per renew interval, in one script call per
// slot, and every shard runs its share of each round.
func TestClusterRenewalRound(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	const lease = 1500 * time.Millisecond
	fc := itest.NewClusterClient(t, c, itest.Transports[0], fairrw.WithLeaseTime(lease), fairrw.WithTracerProvider(tp))

	names := itest.ClusterNames(40)
	slots := map[uint16]bool{}
	var leases []*fairrw.Lease
	for _, n := range names {
		slots[slot.Of(n)] = true
		leases = append(leases, itest.MustLock(t, fc.RWMutex(n), fairrw.Write))
	}
	// Rounds that began while the leases were still being taken (40 Locks
	// can take longer than a renewal interval on a loaded machine) renew
	// those held so far: only the later ones are judged.
	allHeld := time.Now()
	before := make(map[string]int64)
	for _, p := range c.Primaries(t) {
		before[p] = commandStats(t, c, p)["evalsha"].Calls
	}
	time.Sleep(2 * lease) // about six rounds

	// A round confirms all its leases with the time it was sent: one round
	// renewed them all if they all share one deadline. Each shard's part
	// confirms as its answer comes, so a look in the middle of a round
	// may see two rounds' deadlines: look again, a few times.
	var differs error
	for range 20 {
		differs = nil
		deadline := leases[0].Deadline()
		for _, l := range leases {
			if l.Err() != nil {
				t.Fatalf("%s lost: %v", hidden.Name(l), l.Err())
			}
			if !l.Deadline().Equal(deadline) {
				differs = fmt.Errorf("%s: deadline %v; lease %s has %v: not renewed by one round",
					hidden.Name(l), l.Deadline(), hidden.Name(leases[0]), deadline)
				break
			}
		}
		if differs == nil {
			break
		}
		time.Sleep(lease / 15)
	}
	if differs != nil {
		t.Fatal(differs)
	}
	rounds := 0
	for _, s := range spans.Ended() {
		if s.Name() != "fairrw.renew" || s.StartTime().Before(allHeld) {
			continue
		}
		rounds++
		for _, a := range s.Attributes() {
			switch a.Key {
			case "fairrw.renew.leases":
				if a.Value.AsInt64() != int64(len(names)) {
					t.Errorf("a round renewed %d leases, want %d", a.Value.AsInt64(), len(names))
				}
			case "fairrw.renew.batches":
				if a.Value.AsInt64() != int64(len(slots)) {
					t.Errorf("a round made %d script calls, want one per slot (%d)", a.Value.AsInt64(), len(slots))
				}
			}
		}
	}
	if rounds < 3 {
		t.Fatalf("%d renewal rounds in %v, want at least 3", rounds, 2*lease)
	}
	for p, n := range before {
		if after := commandStats(t, c, p)["evalsha"].Calls; after-n < int64(rounds) {
			t.Errorf("primary %s ran %d scripts during %d rounds: not every round reached it", p, after-n, rounds)
		}
	}
	for _, l := range leases {
		itest.MustUnlock(t, l)
	}
}

// TestClusterRefusesSplitNames: a name whose keys would fall in different
// slots is refused with ErrInvalidName before any command (the rueidis
// cluster client would panic on the cross-slot script).
func TestClusterRefusesSplitNames(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	for _, p := range itest.Policies {
		fc := itest.NewClusterClient(t, c, itest.Transports[0], fairrw.WithPolicy(p))
		for _, name := range []string{"a}b", "}", "{}x", "x{}"} {
			var calls int64
			for _, addr := range c.Primaries(t) {
				calls += commandStats(t, c, addr).Scripts()
			}
			_, err := fc.RWMutex(name).TryLock(itest.TestCtx(t))
			if !errors.Is(err, fairrw.ErrInvalidName) {
				t.Fatalf("%s: TryLock(%q) = %v, want ErrInvalidName", p, name, err)
			}
			var after int64
			for _, addr := range c.Primaries(t) {
				after += commandStats(t, c, addr).Scripts()
			}
			if after != calls {
				t.Fatalf("%s: refusing %q ran %d scripts", p, name, after-calls)
			}
		}
	}
}

// commandStats reads INFO commandstats from the node at addr.
func commandStats(t testing.TB, c *redistest.Cluster, addr string) redisinfo.Stats {
	t.Helper()
	s, err := c.Do(t, addr, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("INFO commandstats on %s: %v", addr, err)
	}
	return redisinfo.ParseCommandStats(s)
}

// wantOnlySPublish checks that the cluster's releases so far were published
// with SPUBLISH, never PUBLISH, as Java does on a Redis 7+ cluster.
func wantOnlySPublish(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	var spublish, publish int64
	for _, p := range c.Primaries(t) {
		stats := commandStats(t, c, p)
		spublish += stats["spublish"].Calls
		publish += stats["publish"].Calls
	}
	if spublish == 0 || publish != 0 {
		t.Fatalf("releases used SPUBLISH %d times and PUBLISH %d times; want only SPUBLISH", spublish, publish)
	}
}
