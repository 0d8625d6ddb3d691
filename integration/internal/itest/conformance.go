package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/faults"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

const (
	confLeaseTime     = 1500 * time.Millisecond // the Clients' watchdog lease: renewed every 500ms
	confUnlockTimeout = 300 * time.Millisecond
	confShortMax      = 400 * time.Millisecond
	confLongMax       = 4 * time.Second // the longest lease asked for
	confWorkers       = 10
	ConfDefaultDur    = 20 * time.Second
	// confBound is the liveness bound: a waiter on a name with no live
	// conflicting lease and no grant is granted within it.
	confBound = confLeaseTime + confUnlockTimeout + 2*time.Second
	// confProbeIdle is how long a name stays idle (no live lease, no call)
	// before the stranded-hold probe: covers a hold Redis legitimately keeps
	// a little past its local deadline (an acquire sent before a stall or
	// pause of at most 1s ran after it).
	confProbeIdle = 1500 * time.Millisecond
	// confProbeQuiet is how long after the last fault the probe waits: a
	// renewal that ran but whose reply was lost keeps a hold in Redis up to
	// a lease past its local deadline.
	confProbeQuiet = confLeaseTime + confUnlockTimeout + 1500*time.Millisecond
)

type ConfKind int

const (
	ConfRWKind ConfKind = iota
	ConfMutexKind
	ConfQuorumKind
)

type ConfTarget struct {
	Name   string
	Kind   ConfKind
	Policy fairrw.Policy
	// replica: server 0 has a replica, and two of the Clients acquire under
	// WithSyncReplicas(1, ...); the faults cut the replica off now and then.
	Replica bool
	// tenant, when set, runs the workload as an ACL tenant on a server
	// shared with others (acl_test.go): no faults, which would hit every
	// tenant of the server, and the checks of what Redis keeps look at the
	// tenant's own keys only.
	Tenant *ConfTenant
}

// confTenant is a tenant of a shared server: its namespace, its ACL user,
// and the server with an admin client.
type ConfTenant struct {
	Ns, User, Password string
	Server             *redistest.Redis
	Admin              rueidis.Client
}

// confHandle is shared handle hi of a slot: every call through it is a new
// owner. It resolves the slot's generation at every call.
type confHandle struct {
	slot, hi int
}

// confEnv is one subtest's world.
type confEnv struct {
	T     *testing.T
	tg    ConfTarget
	seed  uint64 // the top-level seed, FAIRRW_CONFORMANCE_SEED
	o     *confOracle
	f     *confFaults
	Names []string
	opts  []fairrw.Option // of every Client
	// slots hold the Clients (RWMutex and Mutex targets) or the quorums;
	// slot 0 is direct (the probe's).
	slots   []*confSlot
	slotMu  sync.Mutex
	closers []func() error // of every Client and Quorum made, guarded by slotMu
	pool    map[string][]confHandle

	runCtx  context.Context // cancelled when the workload ends
	workEnd time.Time       // when it is planned to end
	stopped chan struct{}
	watches sync.WaitGroup // lease watchers

	closedMu sync.Mutex
	closed   string // the name closed to workers for a stranded-hold probe

	scope string // "" or a tenant's "<ns>:": what keys() lists

	stuckFlag // the first call stuck past its ctx's end was logged (watchStuck)
}

func RunConformance(t *testing.T, tg ConfTarget, topSeed, seed uint64, dur time.Duration) {
	e := &confEnv{T: t, tg: tg, seed: topSeed, pool: map[string][]confHandle{}, stopped: make(chan struct{}), workEnd: time.Now().Add(dur)}
	// Registered first, so it runs last: after the Clients closed (which
	// ends every lease), the watchers return.
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { e.watches.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("lease watchers still running 30s after the Clients closed")
		}
	})
	start := time.Now()
	e.f = &confFaults{tb: t, start: start, counts: map[string]int{}}
	e.o = newConfOracle(tg.Name, start, e.f, confBound)
	e.o.ctl = lateness.Start(t)

	nodes := 1
	if tg.Kind == ConfQuorumKind {
		nodes = 3
	}
	for i := range nodes {
		if tg.Tenant != nil {
			e.f.Servers = append(e.f.Servers, tg.Tenant.Server)
			e.f.admins = append(e.f.admins, tg.Tenant.Admin)
			e.scope = tg.Tenant.Ns + ":"
			e.o.ctl.WatchRedis(t, tg.Tenant.Server.Addr, ConfAdminName)
			break
		}
		r := redistest.StartProcess(t)
		e.o.ctl.WatchRedis(t, r.Addr, ConfAdminName)
		e.f.Servers = append(e.f.Servers, r)
		e.f.admins = append(e.f.admins, r.Client(t, func(o *rueidis.ClientOption) {
			o.DisableCache = true
			o.ClientName = ConfAdminName
		}))
		_ = i
	}
	e.f.pauses = tg.Tenant == nil
	if tg.Replica {
		e.f.Replica = confStartReplica(t, e.f.Servers[0], e.f.admins[0])
	}

	e.opts = []fairrw.Option{fairrw.WithPolicy(tg.Policy), fairrw.WithLeaseTime(confLeaseTime), fairrw.WithUnlockTimeout(confUnlockTimeout)}
	// nodeBase is how a Client reaches server i: through a new fault proxy
	// when proxied (every generation of the slot uses it).
	nodeBase := func(i int, proxied bool, label string) rueidis.ClientOption {
		if tg.Tenant != nil {
			opt := e.f.Servers[i].ClientOption()
			opt.Username, opt.Password = tg.Tenant.User, tg.Tenant.Password
			return opt
		}
		if !proxied {
			return e.f.Servers[i].ClientOption()
		}
		p := faults.StartProxy(t, e.f.Servers[i].Addr)
		e.f.proxies = append(e.f.proxies, &confProxy{P: p, label: "proxy(" + label + ")", Server: i})
		return rueidis.ClientOption{InitAddress: []string{p.Addr()}}
	}

	switch tg.Kind {
	case ConfRWKind, ConfMutexKind:
		e.Names = []string{"conf-a", "conf-b", "conf-c"}
		if tg.Kind == ConfMutexKind {
			e.Names = e.Names[:2]
		}
		if tg.Tenant != nil {
			for i, n := range e.Names {
				e.Names[i] = tg.Tenant.Ns + ":" + n
			}
			// Cohorts off: in these 4 s runs their local waits left the
			// Shutdowns no lease to end, often enough to fail the
			// coverage check (why is not yet understood); the other
			// targets run them.
			e.opts = append(e.opts, fairrw.WithNamespace(tg.Tenant.Ns), fairrw.WithCohorts(false))
		}
		for i, spec := range []struct {
			proxied bool
			Tr      Transport
			sync    time.Duration // WithSyncReplicas(1, sync) when the target has a replica
		}{{false, Transports[0], 0}, {true, Transports[0], 0}, {true, Transports[1], 80 * time.Millisecond}, {false, Transports[1], 150 * time.Millisecond}} {
			label := fmt.Sprintf("c%d(%s,%s)", i, map[bool]string{true: "proxy", false: "direct"}[spec.proxied], spec.Tr.Name)
			s := &confSlot{bases: []rueidis.ClientOption{nodeBase(0, spec.proxied, label)}, Tr: spec.Tr}
			if tg.Replica && spec.sync > 0 {
				// The wrapper records every WAIT, for the sync/granted-while-cut
				// diagnostic (conformance_sync_diag.go).
				s.opts = []fairrw.Option{fairrw.WithSyncReplicas(1, spec.sync), fairrw.WithRedisWrapper(e.o.waits.wrap(label))}
			}
			e.slots = append(e.slots, s)
		}
	case ConfQuorumKind:
		e.Names = []string{"conf-a", "conf-b"}
		// q0 all direct (the probe's), q1 with node 0 proxied, q2 with
		// nodes 1 and 2 proxied.
		for qi, proxied := range [][]bool{{false, false, false}, {true, false, false}, {false, true, true}} {
			s := &confSlot{Tr: Transports[qi%2]}
			for ni := range nodes {
				s.bases = append(s.bases, nodeBase(ni, proxied[ni], fmt.Sprintf("q%d.n%d", qi, ni)))
			}
			e.slots = append(e.slots, s)
		}
	}
	for i, s := range e.slots {
		g, err := e.newGen(i, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.cur = g
		for _, n := range e.Names {
			for hi := range confHandlesPerGen {
				e.pool[n] = append(e.pool[n], confHandle{slot: i, hi: hi})
			}
		}
	}

	// Registered after the watchers' and the proxies' cleanups, so it runs
	// before them: every Client closes (ending its leases) while its proxy
	// still runs, then the watchers return.
	t.Cleanup(func() {
		e.slotMu.Lock()
		closers := e.closers
		e.slotMu.Unlock()
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	})

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	e.runCtx = runCtx
	faultCtx, stopFaults := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Add(2)
	if tg.Tenant == nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			e.f.run(faultCtx, rand.New(rand.NewPCG(seed, 1000)))
		}()
	}
	go func() {
		defer bg.Done()
		e.stopper(faultCtx, rand.New(rand.NewPCG(seed, 1002)))
	}()
	go func() {
		defer bg.Done()
		e.monitor(faultCtx, rand.New(rand.NewPCG(seed, 1001)))
	}()
	var workers sync.WaitGroup
	for i := range confWorkers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			e.worker(rand.New(rand.NewPCG(seed, uint64(i))))
		}()
	}

	time.Sleep(dur)
	// A loaded machine (two copies of the suite side by side) does fewer
	// operations in the same time: the workload goes on, up to eight times
	// its length again, until it has exercised what checkExercised asks
	// for, rather than fail for want of trying or lower the bar (twice its
	// length again left the Mutex 21 context checks at end of 40, with
	// goroutines held up 2.9 s at worst; four times, a quorum 36 of 40,
	// with Redis PINGs taking up to 2.1 s).
	for end := time.Now().Add(8 * dur); len(e.shortfalls(dur)) > 0 && time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
	}
	close(e.stopped)
	e.o.Mu.Lock()
	e.o.runEnded = time.Now()
	e.o.Mu.Unlock()
	cancelRun()
	workers.Wait()
	stopFaults()
	bg.Wait()
	e.f.stop()
	e.o.checkLiveness()

	// Every lease ends: unlocked by its worker, or left to expire.
	wait := time.Now().Add(confLongMax + 5*time.Second)
	for e.o.liveCount() > 0 && time.Now().Before(wait) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := e.o.liveCount(); n > 0 {
		e.o.violate("lease-never-ended", "", "%d leases still not Done %v after the workload ended", n, confLongMax+5*time.Second)
	}
	// Then every name, once idle and with no fault for a while, is free
	// for a new owner at once.
	for _, n := range e.Names {
		wait := time.Now().Add(confProbeQuiet + confProbeIdle + 2*time.Second + e.stalled(time.Now()))
		for !e.probeReady(n, time.Now()) && time.Now().Before(wait) {
			time.Sleep(50 * time.Millisecond)
		}
		e.probe(n)
	}
	e.endChecks()
	fair := tg.Kind == ConfRWKind && tg.Policy.String() != "redisson"
	e.o.checkInspectWrites(fair)
	e.o.orderChecks(fair, fair && tg.Policy.String() == fairrw.PhaseFair().String())
	e.checkExercised(dur)
	e.report()
}

// checkExercised fails the run if it did too few of the operations whose
// oracle checks would otherwise pass for want of trying (scaled to the
// workload's duration).
func (e *confEnv) checkExercised(dur time.Duration) {
	for _, s := range e.shortfalls(dur) {
		e.T.Errorf("%s: %s: the workload no longer exercises them; FAIRRW_CONFORMANCE_SEED=%d", e.tg.Name, s, e.seed)
	}
}

// shortfalls lists what the workload has done too little of so far.
func (e *confEnv) shortfalls(dur time.Duration) []string {
	scale := float64(dur) / float64(ConfDefaultDur)
	e.o.Mu.Lock()
	defer e.o.Mu.Unlock()
	var short []string
	for _, m := range []struct {
		stat string
		min  int
	}{
		{"Shutdowns", 2},
		{"Shutdown leases ended", 1},
		{"context checks", 40},
		{"context checks at end", 40},
		{"inspects -> ok", 6},
	} {
		want := max(1, int(float64(m.min)*scale))
		if got := e.o.Stats[m.stat]; got < want {
			short = append(short, fmt.Sprintf("only %d %q in this run, want at least %d", got, m.stat, want))
		}
	}
	return short
}

// endChecks: after a settle wait, no key without a TTL; after a further
// wait of the longest lease and the unlock timeout, no key at all.
func (e *confEnv) endChecks() {
	time.Sleep(time.Second)
	for i := range e.f.Servers {
		for _, k := range e.keys(i) {
			if k.Pttl == -1 {
				e.o.violate("key-without-ttl", "", "redis%d: key %q (%s) has no TTL after every lease ended: %s", i, k.Name, k.typ, k.value)
			}
		}
	}
	time.Sleep(confLongMax + confUnlockTimeout + time.Second)
	for i := range e.f.Servers {
		if keys := e.keys(i); len(keys) > 0 {
			var b strings.Builder
			for _, k := range keys {
				fmt.Fprintf(&b, "\n      %q %s pttl %dms %s", k.Name, k.typ, k.Pttl, k.value)
			}
			e.o.violate("keys-left", "", "redis%d: %d keys left after every lease ended and the longest lease (%v) and unlock timeout passed:%s", i, len(keys), confLongMax, b.String())
		}
	}
}

type confKey struct {
	Name, typ, value string
	Pttl             int64
}

// keys lists the keys of server i matching *pattern* (all when empty).
func (e *confEnv) keysMatching(i int, pattern string) []confKey {
	admin := e.f.admins[i]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	names, err := admin.Do(ctx, admin.B().Keys().Pattern("*"+pattern+"*").Build()).AsStrSlice()
	if err != nil {
		return []confKey{{Name: "(KEYS failed: " + err.Error() + ")"}}
	}
	var out []confKey
	for _, n := range names {
		k := confKey{Name: n}
		k.typ, _ = admin.Do(ctx, admin.B().Type().Key(n).Build()).ToString()
		k.Pttl, _ = admin.Do(ctx, admin.B().Pttl().Key(n).Build()).AsInt64()
		switch k.typ {
		case "hash":
			m, _ := admin.Do(ctx, admin.B().Hgetall().Key(n).Build()).AsStrMap()
			k.value = fmt.Sprint(m)
		case "string":
			k.value, _ = admin.Do(ctx, admin.B().Get().Key(n).Build()).ToString()
		case "zset":
			z, _ := admin.Do(ctx, admin.B().Zrange().Key(n).Min("0").Max("-1").Withscores().Build()).ToArray()
			k.value = fmt.Sprintf("%d members", len(z))
		}
		if len(k.value) > 200 {
			k.value = k.value[:200] + "…"
		}
		out = append(out, k)
	}
	return out
}

func (e *confEnv) keys(i int) []confKey { return e.keysMatching(i, e.scope) }

// dumpName describes the keys of name on every server, for reports.
func (e *confEnv) dumpName(name string) string {
	var b strings.Builder
	for i := range e.f.Servers {
		for _, k := range e.keysMatching(i, name) {
			fmt.Fprintf(&b, "\n      redis%d %q %s pttl %dms %s", i, k.Name, k.typ, k.Pttl, k.value)
		}
	}
	if b.Len() == 0 {
		return " (no keys)"
	}
	return b.String()
}

// report logs the figures and fails the test with every violation (the
// first three of each kind in full).
func (e *confEnv) report() {
	stats, kinds, total := e.o.summary()
	e.T.Logf("%s figures: %s", e.tg.Name, stats)
	ended, frozen, worst := e.o.overrunTotals()
	e.T.Logf("conformance: worst overrun per call [%s]: %v over %d calls returned after their ctx ended (%d of them met a freeze of Redis), bound %v:%s",
		e.tg.Name, worst.Round(100*time.Microsecond), ended, frozen, confOverrunBound, e.o.overrunReport())
	e.T.Logf("conformance: leases [%s]: %s", e.tg.Name, e.o.leaseReport())
	e.T.Logf("%s faults injected: %s", e.tg.Name, e.f.summary())
	e.T.Logf("%s violations: %d %s", e.tg.Name, total, kinds)
	e.o.Mu.Lock()
	defer e.o.Mu.Unlock()
	shown := map[string]int{}
	for _, v := range e.o.violations {
		shown[v.Kind]++
		if shown[v.Kind] <= 3 {
			e.T.Errorf("%s", v.report)
		}
	}
	if total > 0 {
		e.T.Errorf("%s: %d violations (%s); FAIRRW_CONFORMANCE_SEED=%d", e.tg.Name, total, kinds, e.seed)
	}
}
