package sentinel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// Leases of the failover tests.
//
// Redis replicates renewals asynchronously, also under WithSyncReplicas,
// which waits for grants only: a renewal the old primary confirmed in its
// last moments may never reach the new one, whose copy of the hold then
// expires up to a renewal interval (a third of the lease) before the
// holder's deadline. The holders' lease is long enough for the first
// renewal after the switch to reach the new primary before that: rueidis
// switches about 1s after the promotion on SENTINEL FAILOVER, about 3s
// after a kill -9 (down-after 1s), and a failed renewal round is retried
// within a second. With two suites side by side a promotion took 3.5 s and
// a 15 s lease's holder was seen to lose its hold that way (a waiter was
// granted, legitimately: the renewals it had made on the old primary were
// lost), so the lease leaves 20 s to the switch.
const (
	sentinelHoldLease = 30 * time.Second
	// The load's holds last a millisecond, but one whose Unlock could not
	// reach the dead primary stays until its lease ends: a short one, so
	// that the load goes on soon after the failover.
	sentinelLoadLease = 3 * time.Second
	// sentinelSyncTimeout is WithSyncReplicas's: how long a grant waits for
	// the replica's acknowledgement.
	sentinelSyncTimeout = time.Second
	// sentinelWait bounds every wait of these tests for something that must
	// happen (waiters granted, subscriptions re-made, leases confirmed).
	sentinelWait = time.Minute
)

// newSentinelClient returns a Client that reaches the primary through the
// sentinel (rueidis's Sentinel mode) over tr, closed at cleanup.
func newSentinelClient(t testing.TB, s *redistest.Sentinel, tr itest.Transport, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return itest.NewClientOn(t, s.ClientOption(), tr, opts...)
}

// TestSentinelBehaviour runs the behavioural suite for every policy (over
// the transports of topologyMatrix), through one sentinel: rueidis asks it for the primary,
// and Raw is a Sentinel-mode client too.
func TestSentinelBehaviour(t *testing.T) {
	s := redistest.StartSentinel(t)
	raw := s.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	for _, m := range itest.TopologyMatrix() {
		t.Run(m.P.String()+"/"+m.Tr.Name, func(t *testing.T) {
			t.Parallel() // each policy on its own locks, as in TestBehaviour
			locktest.Run(t, locktest.Env{Raw: raw, Policy: m.P, Repeat: itest.LongRun() && m.Tr.Name != itest.Transports[0].Name, New: func(t testing.TB, opts ...fairrw.Option) *fairrw.Client {
				return newSentinelClient(t, s, m.Tr, opts...)
			}})
		})
	}
}

// TestSentinelFailover: SENTINEL FAILOVER while one Client holds write and
// read locks, Clients over every transport wait for them, and a recorded
// load runs. Every Client follows the new primary (its new grants are
// there); the waiters' subscriptions are made again there and every waiter
// is granted once the holders unlock; the holds granted under
// WithSyncReplicas survive, renewed on the new primary; the others survive
// too or are reported lost, never kept while their hold is gone; and the
// load's history passes every checker.
//
// Only the synced grants are sure to survive: the sentinel promotes the
// replica without stopping the old primary, which Clients go on using
// until the +switch-master event reaches them (about 1s); what they write
// there meanwhile is lost. WAIT refuses those grants (the old primary has
// no replica any more), so they fail with ErrNotReplicated.
func TestSentinelFailover(t *testing.T) {
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			s := redistest.StartSentinel(t)
			sc := startScene(t, s, p)
			start := time.Now()
			promoted := s.Failover(t)
			t.Logf("the sentinel promoted %s in %v", promoted.Addr, time.Since(start).Round(time.Millisecond))
			sc.afterFailover(t, s)
		})
	}
}

// TestSentinelKillPrimary: the primary dies (kill -9) under the same scene,
// and the sentinel fails over by itself once it has not answered for
// down-after-milliseconds (1s). Besides what TestSentinelFailover checks:
// write grants the replica never received (its link was cut before them) are
// lost, their holder is told (ErrLeaseLost), and the next holder's token,
// from the new primary's clock, is still above theirs, so a store that
// keeps the highest token refuses their late writes, as in
// TestFaultFailover.
func TestSentinelKillPrimary(t *testing.T) {
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			s := redistest.StartSentinel(t)
			sc := startScene(t, s, p)
			lost := grantUnreplicated(t, s, p)
			s.Primary.Kill(t)
			s.Replica.Resume(t)
			start := time.Now()
			promoted := s.AwaitFailover(t)
			t.Logf("the sentinel promoted %s %v after the kill", promoted.Addr, time.Since(start).Round(time.Millisecond))
			lost.check(t, s, p)
			sc.afterFailover(t, s)
		})
	}
}

// Lock names of the scene.
const (
	heldWrite  = "sentinel:held-write"  // write held under WithSyncReplicas
	heldRead   = "sentinel:held-read"   // read held under WithSyncReplicas
	asyncWrite = "sentinel:async-write" // write held without it
	asyncRead  = "sentinel:async-read"  // read held without it
	loadName   = "sentinel:load"
)

// scene is what runs across a failover.
type scene struct {
	policy  fairrw.Policy
	clients []*fairrw.Client // all of them, to check each follows the new primary
	synced  []*fairrw.Lease  // must survive
	async   []*fairrw.Lease  // survive, or are reported lost
	waiters []*waiter
	load    *sentinelLoad
}

// waiter is one Lock or RLock waiting in a goroutine; it unlocks at once
// when granted.
type waiter struct {
	name string
	mode fairrw.Mode
	tr   string
	done chan struct{}
	err  error  // valid once done is closed
	woke string // the grant's WokenBy
}

// startScene takes the holds, starts the waiters (a writer and a reader
// for heldWrite, a writer for heldRead and asyncWrite, in one Client per
// transport) and waits until they are subscribed, and starts the load.
func startScene(t *testing.T, s *redistest.Sentinel, p fairrw.Policy) *scene {
	t.Helper()
	sc := &scene{policy: p}
	newC := func(tr itest.Transport, lease time.Duration, synced bool) *fairrw.Client {
		opts := []fairrw.Option{fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease)}
		if synced {
			opts = append(opts, fairrw.WithSyncReplicas(1, sentinelSyncTimeout))
		}
		c := newSentinelClient(t, s, tr, opts...)
		sc.clients = append(sc.clients, c)
		return c
	}
	holders := newC(itest.Transports[0], sentinelHoldLease, true)
	async := newC(itest.Transports[0], sentinelHoldLease, false)
	sc.synced = []*fairrw.Lease{itest.MustLock(t, holders.RWMutex(heldWrite), fairrw.Write), itest.MustLock(t, holders.RWMutex(heldRead), fairrw.Read)}
	sc.async = []*fairrw.Lease{itest.MustLock(t, async.RWMutex(asyncWrite), fairrw.Write), itest.MustLock(t, async.RWMutex(asyncRead), fairrw.Read)}

	ctx, cancel := context.WithTimeout(context.Background(), 2*sentinelWait)
	t.Cleanup(cancel)
	for _, tr := range itest.Transports {
		c := newC(tr, sentinelHoldLease, true)
		for _, w := range []*waiter{
			{name: heldWrite, mode: fairrw.Write}, {name: heldWrite, mode: fairrw.Read},
			{name: heldRead, mode: fairrw.Write}, {name: asyncWrite, mode: fairrw.Write},
		} {
			w.tr, w.done = tr.Name, make(chan struct{})
			sc.waiters = append(sc.waiters, w)
			go w.run(ctx, c.RWMutex(w.name))
		}
	}
	direct := s.Primary.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	sc.awaitSubscribed(t, direct)
	sc.blocked(t, false)

	sc.load = startSentinelLoad(t, []*fairrw.Client{
		newC(itest.Transports[0], sentinelLoadLease, true),
		newC(itest.Transports[2], sentinelLoadLease, true),
	})
	sc.load.awaitGrants(t, 20)
	return sc
}

func (w *waiter) run(ctx context.Context, m *fairrw.RWMutex) {
	defer close(w.done)
	l, err := locktest.Acquire(ctx, m, w.mode, true)
	if err != nil {
		w.err = err
		return
	}
	w.woke = hidden.WokenBy(l)
	w.err = l.Unlock(ctx)
}

// awaitSubscribed waits until every waiter Client is subscribed to the
// channel of each name waited for, on the server direct is connected to.
func (sc *scene) awaitSubscribed(t *testing.T, direct rueidis.Client) {
	t.Helper()
	for _, name := range []string{heldWrite, heldRead, asyncWrite} {
		channel := fwire.Fair(name).Channel
		if sc.policy.String() == fairrw.Redisson().String() {
			channel = compat.Channel(name)
		}
		eventually(t, "subscriptions to "+channel, func() (bool, string) {
			n := numsub(t, direct, channel)
			return n == int64(len(itest.Transports)), strconv.FormatInt(n, 10) + " subscribers"
		})
	}
}

// blocked fails t if a waiter for a synced hold has returned (all of them,
// unless onlySynced).
func (sc *scene) blocked(t *testing.T, onlySynced bool) {
	t.Helper()
	for _, w := range sc.waiters {
		if onlySynced && w.name == asyncWrite {
			continue
		}
		select {
		case <-w.done:
			// What the holders' leases say tells a hold lost (and
			// reported) from a grant beside a live one.
			var holders []string
			for _, l := range append(append([]*fairrw.Lease(nil), sc.synced...), sc.async...) {
				holders = append(holders, fmt.Sprintf("%s %s: Err %v, deadline in %v", hidden.Mode(l), hidden.Name(l), l.Err(), time.Until(l.Deadline()).Round(time.Millisecond)))
			}
			t.Fatalf("%s waiter for %s (%s) returned while the lock is held: %v (woken by %q); the holders: %s", w.mode, w.name, w.tr, w.err, w.woke, strings.Join(holders, "; "))
		default:
		}
	}
}

// afterFailover checks the scene once the sentinel has promoted
// s.Primary. The old primary is made a replica of it (s.AttachReplica)
// once every Client has left it: the sentinel would do so only about 8s
// later, after a kill not at all, and until then the Clients under
// WithSyncReplicas are granted nothing (ErrNotReplicated).
func (sc *scene) afterFailover(t *testing.T, s *redistest.Sentinel) {
	t.Helper()
	direct := s.Primary.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	sc.awaitSwitch(t, s, direct)
	s.AttachReplica(t)
	for i, c := range sc.clients {
		itest.MustUnlock(t, probeGrant(t, c, direct, "sentinel:probe:"+strconv.Itoa(i)))
	}
	switched := time.Now() // every Client sends to the new primary from now on
	sc.awaitSubscribed(t, direct)
	sc.blocked(t, true)
	sc.checkLeases(t, switched)
	for _, w := range sc.waiters {
		select {
		case <-w.done:
		case <-time.After(sentinelWait):
			t.Fatalf("%s waiter for %s (%s) still waits %v after the holders unlocked", w.mode, w.name, w.tr, sentinelWait)
		}
		if w.err != nil {
			t.Fatalf("%s waiter for %s (%s): %v", w.mode, w.name, w.tr, w.err)
		}
		t.Logf("%s waiter for %s (%s) granted, woken by %s", w.mode, w.name, w.tr, w.woke)
	}
	sc.load.awaitGrants(t, sc.load.grants.Load()+20)
	sc.load.stop(t)
}

// awaitSwitch waits until every Client of the scene sends to the new
// primary: a write held there only (taken by a new Client and checked
// there, see probeGrant) refuses their TryLock. Until it does, a TryLock
// reaches the old primary: granted and given back at once, or refused with
// ErrNotReplicated (the old primary lost its replica), or a connection
// error after a kill. The Clients are polled together: under
// WithSyncReplicas each try waits a second for a replica that is not there.
func (sc *scene) awaitSwitch(t *testing.T, s *redistest.Sentinel, direct rueidis.Client) {
	t.Helper()
	marker := probeGrant(t, newSentinelClient(t, s, itest.Transports[1], fairrw.WithPolicy(sc.policy)), direct, "sentinel:marker")
	defer itest.MustUnlock(t, marker)
	ctx, cancel := context.WithTimeout(context.Background(), sentinelWait)
	defer cancel()
	errs := make([]error, len(sc.clients))
	var wg sync.WaitGroup
	for i, c := range sc.clients {
		wg.Go(func() { errs[i] = refusedThere(ctx, c.RWMutex(hidden.Name(marker))) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Client %d (%s) does not reach the new primary: %v", i, hidden.ClientID(sc.clients[i]), err)
		}
	}
}

// refusedThere tries m's write until it is refused with ErrNotAcquired, or
// ctx ends.
func refusedThere(ctx context.Context, m *fairrw.RWMutex) error {
	for {
		l, err := m.TryLock(ctx)
		if errors.Is(err, fairrw.ErrNotAcquired) {
			return nil
		}
		if err == nil {
			_ = l.Unlock(ctx)
			err = errors.New("granted")
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkLeases waits until every held lease has been renewed by a round sent
// after switched, or has ended, then checks it: a synced lease must be
// alive, an unsynced one alive or lost (ErrLeaseLost); an alive lease must
// unlock (ErrNotHeld would mean it was believed held while its hold was
// gone).
func (sc *scene) checkLeases(t *testing.T, switched time.Time) {
	t.Helper()
	for _, l := range append(append([]*fairrw.Lease(nil), sc.synced...), sc.async...) {
		eventually(t, "a renewal of "+hidden.Name(l)+" on the new primary", func() (bool, string) {
			return ended(l) || l.Deadline().After(switched.Add(sentinelHoldLease)), "deadline " + l.Deadline().Format(time.StampMilli)
		})
	}
	for _, l := range sc.synced {
		if ended(l) {
			t.Fatalf("the synced %s lease on %s was lost in the failover: %v", hidden.Mode(l), hidden.Name(l), l.Err())
		}
	}
	for _, l := range sc.async {
		if ended(l) {
			if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("the %s lease on %s ended with %v, want ErrLeaseLost", hidden.Mode(l), hidden.Name(l), l.Err())
			}
			t.Logf("the unsynced %s lease on %s was lost in the failover and reported: %v", hidden.Mode(l), hidden.Name(l), l.Err())
			continue
		}
		t.Logf("the unsynced %s lease on %s survived the failover", hidden.Mode(l), hidden.Name(l))
	}
	for _, l := range append(append([]*fairrw.Lease(nil), sc.synced...), sc.async...) {
		if ended(l) {
			continue
		}
		if err := l.Unlock(itest.TestCtx(t)); err != nil {
			t.Fatalf("unlock of the %s lease on %s, renewed on the new primary: %v (Err %v)", hidden.Mode(l), hidden.Name(l), err, l.Err())
		}
	}
}

func ended(l *fairrw.Lease) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}

// probeGrant takes write locks on fresh names through c until one is
// granted on the server direct is connected to, and returns that lease: the
// name's fencing counter there holds the grant's token. The name is new, so
// its counter cannot have come there by replication from the old primary,
// which stopped when the replica was promoted.
func probeGrant(t *testing.T, c *fairrw.Client, direct rueidis.Client, prefix string) *fairrw.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelWait)
	defer cancel()
	for i := 0; ; i++ {
		name := prefix + ":" + strconv.Itoa(i)
		l, err := c.RWMutex(name).Lock(ctx)
		if err != nil && (!errors.Is(err, fairrw.ErrNotReplicated) || ctx.Err() != nil) {
			t.Fatalf("probe Lock %s: %v", name, err)
		}
		if err == nil {
			fence, ferr := direct.Do(ctx, direct.B().Get().Key(fwire.Fence(name)).Build()).AsUint64()
			if ferr == nil && fence == l.Token() {
				return l
			}
			if uerr := l.Unlock(ctx); uerr != nil && !errors.Is(uerr, fairrw.ErrNotHeld) {
				t.Fatalf("probe Unlock %s: %v", name, uerr)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("Client %s never granted a lock on the new primary", hidden.ClientID(c))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func numsub(t *testing.T, c rueidis.Client, channel string) int64 {
	t.Helper()
	counts, err := c.Do(itest.TestCtx(t), c.B().PubsubNumsub().Channel(channel).Build()).ToArray()
	if err != nil || len(counts) != 2 {
		t.Fatalf("PUBSUB NUMSUB %s: %v %v", channel, counts, err)
	}
	n, _ := counts[1].AsInt64()
	return n
}

// eventually polls cond until it holds, failing t after sentinelWait with
// what cond last said.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(sentinelWait)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last: %s)", what, sentinelWait, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unreplicated is a write grant the replica never received, and the store
// its holder wrote to.
type unreplicated struct {
	held  *fairrw.Lease
	store history.Store
}

// grantUnreplicated grants the write of a lock once with the replica in
// sync, then cuts the replica off (SIGSTOP, and the primary drops its link
// with CLIENT KILL TYPE replica: a frozen replica would otherwise still find
// the stream in its socket buffer after the primary's death) and grants it
// twice more, unreplicated. The last grant is kept, its token given to a
// store. The caller kills the primary and resumes the replica.
func grantUnreplicated(t *testing.T, s *redistest.Sentinel, p fairrw.Policy) *unreplicated {
	t.Helper()
	const name = "sentinel:lost"
	c := newSentinelClient(t, s, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(sentinelHoldLease))
	itest.MustUnlock(t, itest.MustLock(t, c.RWMutex(name), fairrw.Write)) // replicated
	direct := s.Primary.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	ctx := itest.TestCtx(t)
	// WAIT counts the writes of its own connection, and replication keeps
	// order: once this SET is acknowledged, so is the grant before it.
	res := direct.DoMulti(ctx, direct.B().Set().Key("sentinel:sync").Value("1").Build(),
		direct.B().Wait().Numreplicas(1).Timeout(10000).Build())
	if n, err := res[1].AsInt64(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on the primary: %d, %v", n, err)
	}
	s.Replica.Pause(t)
	if n, err := direct.Do(ctx, direct.B().ClientKill().TypeReplica().Build()).AsInt64(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE replica: %d, %v", n, err)
	}
	u := &unreplicated{}
	itest.MustUnlock(t, itest.MustLock(t, c.RWMutex(name), fairrw.Write)) // unreplicated
	u.held = itest.MustLock(t, c.RWMutex(name), fairrw.Write)             // unreplicated
	if !u.store.Increment(u.held.Token()) {
		t.Fatal("the store refused the first holder")
	}
	return u
}

// check: after the failover the lock is free on the new primary; the new
// holder's token is above the lost grant's (tokens come from the server's
// clock), so the store takes it and refuses the old holder's; the old
// holder is told its lease is lost.
func (u *unreplicated) check(t *testing.T, s *redistest.Sentinel, p fairrw.Policy) {
	t.Helper()
	c := newSentinelClient(t, s, itest.Transports[1], fairrw.WithPolicy(p))
	l := itest.MustLock(t, c.RWMutex(hidden.Name(u.held)), fairrw.Write)
	defer itest.MustUnlock(t, l)
	if !ended(u.held) {
		t.Logf("granted again (token %d) while the unreplicated holder (token %d) still believes it holds", l.Token(), u.held.Token())
	}
	if l.Token() <= u.held.Token() {
		t.Fatalf("the new primary's token %d is not above the lost grant's %d: tokens must go on increasing across a failover", l.Token(), u.held.Token())
	}
	if !u.store.Increment(l.Token()) {
		t.Fatalf("the store refused the new holder's token %d after %d", l.Token(), u.held.Token())
	}
	if u.store.Increment(u.held.Token()) {
		t.Fatalf("the store accepted the lost grant's token %d after %d: fencing did not catch it", u.held.Token(), l.Token())
	}
	itest.AwaitLost(t, u.held, sentinelWait)
}

// sentinelLoad is runExclusive's workload, run across a failover by
// Clients under WithSyncReplicas. A grant that WAIT could not confirm is
// given back and fails with ErrNotReplicated: counted, not failed. A
// failed Unlock is counted too: one that could not reach Redis within the
// unlock timeout (the primary was dead), or that found the hold gone (its
// lease ran out meanwhile: ErrNotHeld). For the checkers its hold ended at
// the Unlock call, or when its Done closed if that came first, and Redis
// frees it when its lease runs out.
type sentinelLoad struct {
	rec    *history.Recorder
	store  history.Store
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error

	grants, accepted, notReplicated, unavailable, unlockFailed atomic.Int64
}

const sentinelLoadWorkers = 4

func startSentinelLoad(t *testing.T, clients []*fairrw.Client) *sentinelLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &sentinelLoad{rec: history.NewRecorder(), cancel: cancel, errs: make(chan error, sentinelLoadWorkers)}
	for i := range sentinelLoadWorkers {
		l.wg.Go(func() { l.work(ctx, clients[i%len(clients)], i) })
	}
	t.Cleanup(func() { cancel(); l.wg.Wait() }) // when the test failed before stop
	return l
}

func (l *sentinelLoad) work(ctx context.Context, c *fairrw.Client, i int) {
	// One handle for the whole run. An Unlock that the old primary
	// confirmed after the promotion is lost: the new primary still has that
	// hold. Every acquire on the handle is a new owner, so the next one
	// waits for that ghost's lease instead of re-entering it with the old
	// hold's fencing token (which CheckFencing would report).
	m := c.RWMutex(loadName)
	for n := 0; ctx.Err() == nil; n++ {
		mode := fairrw.Read
		if (i+n)%3 == 0 {
			mode = fairrw.Write
		}
		lease, err := l.rec.Acquire(ctx, m, mode, false)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, fairrw.ErrNotReplicated):
				l.notReplicated.Add(1)
				continue
			case errors.Is(err, fairrw.ErrUnavailable):
				// Its ctx has no deadline: while the killed primary is
				// not yet replaced (down-after and the promotion take
				// seconds), a wait for a connection ends after the
				// connect timeout (WithConnectTimeout), and the worker
				// asks again, as a service would.
				l.unavailable.Add(1)
				continue
			}
			l.errs <- err
			return
		}
		l.grants.Add(1)
		if mode == fairrw.Write && l.store.Increment(lease.Token()) {
			l.accepted.Add(1)
		}
		time.Sleep(time.Millisecond)
		if err := l.rec.Release(context.Background(), lease); err != nil {
			l.unlockFailed.Add(1)
		}
	}
}

// awaitGrants waits until the load has made n grants in all.
func (l *sentinelLoad) awaitGrants(t *testing.T, n int64) {
	t.Helper()
	eventually(t, "load grants", func() (bool, string) {
		return l.grants.Load() >= n, strconv.FormatInt(l.grants.Load(), 10) + " grants"
	})
}

// stop ends the load and checks its history (exclusion, fencing,
// porcupine) and its guarded store.
func (l *sentinelLoad) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	close(l.errs)
	for err := range l.errs {
		t.Errorf("load: %v", err)
	}
	history.Verify(t, l.rec)
	if err := l.store.Check(int(l.accepted.Load())); err != nil {
		t.Errorf("guarded store: %v", err)
	}
	t.Logf("load: %d grants, %d refused as not replicated, %d unavailable, %d unlocks failed", l.grants.Load(), l.notReplicated.Load(), l.unavailable.Load(), l.unlockFailed.Load())
}
