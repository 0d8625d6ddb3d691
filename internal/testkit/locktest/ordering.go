package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// The ordering suites: what each fair policy promises beyond exclusion
// (shared/docs/measuring.md). Waiters are started one at a time and given
// time to queue, so that arrival order is known.

// RunWriterPreferring runs the writer-preferring policy's ordering tests.
func RunWriterPreferring(t *testing.T, env Env) {
	env.Policy = fairrw.WriterPreferring()
	runScenarios(t, env, queueOrdering)
}

// RunPhaseFair runs the phase-fair policy's ordering tests: the queue's,
// and the alternation of phases.
func RunPhaseFair(t *testing.T, env Env) {
	env.Policy = fairrw.PhaseFair()
	runScenarios(t, env, append(queueOrdering, scenario{"ReadersEnterBetweenWriters", ReadersEnterBetweenWriters}))
}

type scenario struct {
	name string
	fn   func(*testing.T, Env)
}

// queueOrdering holds what both fair policies promise about their queue.
var queueOrdering = []scenario{
	{"ReentrantReadWhileWriterWaits", ReentrantReadWhileWriterWaits},
	{"WaitingWriterTurnsReadersAway", WaitingWriterTurnsReadersAway},
	{"WritersFIFO", WritersFIFO},
	{"CancelledWriterLeavesQueue", CancelledWriterLeavesQueue},
	{"ReadersReturnWhenWriterLeaves", ReadersReturnWhenWriterLeaves},
}

// runScenarios runs each scenario as a subtest.
func runScenarios(t *testing.T, env Env, scenarios []scenario) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.fn(t, env) })
	}
}

// queueUp starts an acquire and waits until it is blocked, and queued in
// Redis where the policy records its waiters (Inspect): a writer of the
// fair policies, a reader under PhaseFair. The checks after it (a reader
// turned away by a waiting writer) need its entry: 100 ms of waiting did
// not give a loaded machine time to write it. Where nothing is recorded
// (the Redisson policy), being blocked for 100 ms is all there is to see.
func queueUp(t *testing.T, env Env, c context.Context, m *fairrw.RWMutex, mode fairrw.Mode) <-chan result {
	t.Helper()
	policy := fairrw.WriterPreferring().String() // the default
	if env.Policy != nil {
		policy = env.Policy.String()
	}
	records := policy != fairrw.Redisson().String() && (mode == fairrw.Write || policy == fairrw.PhaseFair().String())
	var inspector *fairrw.Client
	before := 0
	if records {
		inspector = env.client(t)
		before = waiters(t, inspector, hidden.Name(m), mode)
	}
	ch := acquireAsync(c, m, mode)
	blocked(t, ch)
	for deadline := time.Now().Add(10 * time.Second); records && waiters(t, inspector, hidden.Name(m), mode) <= before; {
		if time.Now().After(deadline) {
			t.Fatalf("a %s on %q not queued in Redis after 10s", mode, hidden.Name(m))
		}
		blocked(t, ch)
	}
	return ch
}

// waiters returns how many waiters of mode Inspect finds on name.
func waiters(t *testing.T, c *fairrw.Client, name string, mode fairrw.Mode) int {
	t.Helper()
	info, err := c.Inspect(ctx(t), name)
	if err != nil {
		t.Fatalf("Inspect %q: %v", name, err)
	}
	if mode == fairrw.Write {
		return len(info.WaitingWriters)
	}
	return len(info.WaitingReaders)
}

// ReentrantReadWhileWriterWaits is the reentrancy deadlock of the wait_write
// design, fixed: A reads, W waits, A takes a further read from its Lease
// (granted at once, though a new owner's read on A's handle is turned away),
// A unlocks both, W gets the lock.
func ReentrantReadWhileWriterWaits(t *testing.T, env Env) {
	c := env.client(t)
	a := c.RWMutex(name(t))
	r1 := lock(t, a, fairrw.Read)
	w := queueUp(t, env, ctx(t), c.RWMutex(name(t)), fairrw.Write)
	r2 := hold(t, r1, fairrw.Read)
	refused(t, a, fairrw.Read)
	unlock(t, r1)
	blocked(t, w)
	unlock(t, r2)
	unlock(t, receive(t, w))
	EventuallyNoKeys(t, env, name(t))
}

// WaitingWriterTurnsReadersAway: while a writer waits behind readers, a new
// reader is refused; the writer enters when the readers present leave.
func WaitingWriterTurnsReadersAway(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	r := lock(t, c1.RWMutex(name(t)), fairrw.Read)
	w := queueUp(t, env, ctx(t), c2.RWMutex(name(t)), fairrw.Write)
	refused(t, c1.RWMutex(name(t)), fairrw.Read)
	refused(t, c2.RWMutex(name(t)), fairrw.Read)
	unlock(t, r)
	unlock(t, receive(t, w))
	EventuallyNoKeys(t, env, name(t))
}

// WritersFIFO: writers are served in the order they arrived, across clients.
func WritersFIFO(t *testing.T, env Env) {
	// Cohorts pass the write to a writer of the holder's own Client first
	// (up to a bound): strict FIFO across Clients is cohorts off.
	off := fairrw.WithCohorts(false)
	clients := []*fairrw.Client{env.client(t, off), env.client(t, off), env.client(t, off)}
	held := lock(t, clients[0].RWMutex(name(t)), fairrw.Write)
	var queue []<-chan result
	for i := range 3 {
		queue = append(queue, queueUp(t, env, ctx(t), clients[(i+1)%3].RWMutex(name(t)), fairrw.Write))
	}
	unlock(t, held)
	for i, ch := range queue {
		l := receive(t, ch)
		for _, later := range queue[i+1:] {
			blocked(t, later)
		}
		unlock(t, l)
	}
	EventuallyNoKeys(t, env, name(t))
}

// CancelledWriterLeavesQueue: a waiting writer that gives up removes its
// queue entry at once, so readers are not turned away for its sake. At
// once is within the library's grace (hidden.CleanupGrace) on a machine
// that runs the test promptly; past it the give-up goes on in the
// background. So a read refused right after is accepted only when the
// machine was late by half the grace during the cancelled call (the
// control: the worst lateness of a bare 1 ms sleep), and must then be
// granted once the give-up is done, within the unlock timeout.
func CancelledWriterLeavesQueue(t *testing.T, env Env) {
	c := env.client(t)
	r := lock(t, c.RWMutex(name(t)), fairrw.Read)
	cctx, cancel := context.WithCancel(context.Background())
	w := queueUp(t, env, cctx, c.RWMutex(name(t)), fairrw.Write)
	refused(t, c.RWMutex(name(t)), fairrw.Read)
	var res result
	// Beside the cancellation, a bare script of the give-back's size on
	// the same Redis (as in UnlockIgnoresCancelledContext): a redis-server
	// held up by a loaded machine answers the give-back late while the
	// test's own goroutines run on time (refused once, with two suites side
	// by side, with the machine 0.7 ms late).
	var script time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		_ = env.Raw.Do(ctx(t), env.Raw.B().Eval().Script(bareScript).Numkeys(0).Build()).Error()
		script = time.Since(start)
	}()
	stall := MachineStall(func() {
		cancel()
		res = <-w
	})
	<-done
	stall = max(stall, script)
	if !errors.Is(res.err, context.Canceled) {
		t.Fatalf("cancelled writer: %v", res.err)
	}
	l, err := Acquire(ctx(t), c.RWMutex(name(t)), fairrw.Read, false)
	if err != nil {
		if !errors.Is(err, fairrw.ErrNotAcquired) || stall < hidden.CleanupGrace/2 {
			t.Fatalf("Try read after the writer gave up: %v (the machine's worst lateness during the cancelled call, or a bare script's time beside it, %v)", err, stall)
		}
		t.Logf("Try read refused after the writer gave up, with the machine or Redis %v late: waiting for the give-up in the background", stall)
		deadline := time.Now().Add(hidden.UnlockTimeout)
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			l, err = Acquire(ctx(t), c.RWMutex(name(t)), fairrw.Read, false)
		}
		if err != nil {
			t.Fatalf("Try read %v after the writer gave up: %v", hidden.UnlockTimeout, err)
		}
	}
	unlock(t, l)
	unlock(t, r)
	EventuallyNoKeys(t, env, name(t))
}

// ReadersReturnWhenWriterLeaves: readers turned away by a waiting writer
// are woken as soon as that writer withdraws, not at their retry bound.
func ReadersReturnWhenWriterLeaves(t *testing.T, env Env) {
	c := env.client(t, fairrw.WithLeaseTime(time.Minute)) // a retry bound of 20s would fail the test
	r := lock(t, c.RWMutex(name(t)), fairrw.Read)
	cctx, cancel := context.WithCancel(context.Background())
	w := queueUp(t, env, cctx, c.RWMutex(name(t)), fairrw.Write)
	turnedAway := queueUp(t, env, ctx(t), c.RWMutex(name(t)), fairrw.Read)
	cancel()
	<-w
	select {
	case res := <-turnedAway:
		if res.err != nil {
			t.Fatal(res.err)
		}
		unlock(t, res.lease)
	case <-time.After(5 * time.Second):
		t.Fatal("reader still waits after the writer that turned it away left")
	}
	unlock(t, r)
	EventuallyNoKeys(t, env, name(t))
}

// ReadersEnterBetweenWriters is the phase-fair rule: when a write ends,
// every reader waiting at that moment enters before the next writer, even
// one that queued before them; that writer then waits for those readers.
func ReadersEnterBetweenWriters(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	held := lock(t, c1.RWMutex(name(t)), fairrw.Write)
	w2 := queueUp(t, env, ctx(t), c2.RWMutex(name(t)), fairrw.Write)
	r1 := queueUp(t, env, ctx(t), c1.RWMutex(name(t)), fairrw.Read)
	r2 := queueUp(t, env, ctx(t), c2.RWMutex(name(t)), fairrw.Read)
	unlock(t, held)
	l1, l2 := receive(t, r1), receive(t, r2)
	blocked(t, w2)
	// A reader arriving now (a writer waits) waits for the next write.
	r3 := queueUp(t, env, ctx(t), c1.RWMutex(name(t)), fairrw.Read)
	unlock(t, l1)
	blocked(t, w2)
	unlock(t, l2)
	w := receive(t, w2)
	blocked(t, r3)
	unlock(t, w)
	unlock(t, receive(t, r3))
	EventuallyNoKeys(t, env, name(t))
}
