package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

const (
	// peersContendedClients x peersContendedGoroutines goroutines share the
	// one lock name of op=contended (goroutine g on Client g%clients).
	peersContendedClients    = 2
	peersContendedGoroutines = 8
	// peersAcquireBound bounds one Acquire of op=contended. A timed-out
	// Acquire is counted (timeouts) and retried, not an error: rueidislock
	// now and then loses a waiter's wake-up, and the waiter then waits until
	// its ctx ends (see lostWakeups in bench/internal/contender's tests).
	peersAcquireBound = 5 * time.Second
)

// BenchmarkPeers compares every contender of bench/internal/contender (the
// three fairrw policies, fairrw's Mutex and the rueidislock, redislock and
// redsync peers), side by side on one redis-server, write (exclusive) locks
// only, each with its default or documented settings (Contender.Settings,
// logged once). Every client is built from the same ClientOption (rueidis
// defaults; the go-redis based peers take its address).
//
//	op=lockunlock-uncontended: 64 goroutines, each on its own lock name and
//	  its own handle, on one Client, loop Acquire+Unlock; reports cycles/s,
//	  and the client's cost per cycle: allocs/op, B/op and client-cpu-µs/op
//	  (this test process's CPU over the loop, see runCycles). Beside them,
//	  baseline=lua-pair and baseline=evalsha-pair run the same loop over two
//	  bare script calls per cycle (bench/internal/baseline) on one rueidis
//	  client.
//	op=lockunlock-fresh: as op=lockunlock-uncontended, but each cycle on a
//	  name never used before, through a handle made for it: nothing a
//	  handle or Redis keeps from one cycle to the next helps it.
//	op=contended: 8 goroutines, each its own handle, on 2 Clients, all on one
//	  lock name, loop Acquire+Unlock until b.N grants; reports grants/s,
//	  max-wait-ms (the longest Acquire call, granted or not: the Acquires
//	  still waiting at the b.N-th grant are cancelled then) and timeouts
//	  (Acquires not granted within 5s, then retried; the run's total).
//	op=trylock: one goroutine loops TryAcquire+Unlock on a free lock name;
//	  ns/op is the latency of the pair.
//
// Each also reports what Redis did (redis-cpu-µs/op, redis-busy, scripts/op,
// tracked-keys/op) as the Uncontended benchmark does. scripts/op counts
// EVALSHA and EVAL only: redsync takes its lock with a plain SET NX.
func BenchmarkPeers(b *testing.B) {
	e := newEnv(b)
	opt := e.option(0, false)
	ops := []struct {
		name string
		run  func(*testing.B, *env, contender.Contender, rueidis.ClientOption)
	}{
		{"lockunlock-uncontended", benchPeersUncontended},
		{"lockunlock-fresh", benchPeersFresh},
		{"contended", benchPeersContended},
		{"trylock", benchPeersTryLock},
	}
	all := append(contender.All(), contender.Extras()...)
	for _, c := range all {
		b.Logf("%s (%s): %s", c.Name, c.Library, c.Settings)
	}
	for _, op := range ops {
		if op.name == "lockunlock-uncontended" {
			// The floor of a cycle's cost, on both sides: the same
			// loop over two bare script calls per cycle.
			for _, p := range baseline.Pairs() {
				b.Run(fmt.Sprintf("op=%s/baseline=%s", op.name, p.Name), func(b *testing.B) {
					benchBaselinePair(b, e, opt, p)
				})
			}
		}
		for _, c := range all {
			b.Run(fmt.Sprintf("op=%s/contender=%s", op.name, c.Name), func(b *testing.B) {
				if err := c.Supports(opt, false); err != nil {
					b.Skip(err)
				}
				op.run(b, e, c, opt)
			})
		}
	}
}

// openContender opens a Client of c, closed by b's cleanup.
func openContender(b *testing.B, c contender.Contender, opt rueidis.ClientOption) contender.Client {
	b.Helper()
	cl, err := c.Open(opt)
	if err != nil {
		b.Fatalf("%s: Open: %v", c.Name, err)
	}
	b.Cleanup(cl.Close)
	return cl
}

// lockUnlock takes m for writing, waiting with ctx, and releases it.
func lockUnlock(ctx context.Context, m contender.Mutex) error {
	h, err := m.Acquire(ctx, fairness.Writer)
	if err != nil {
		return err
	}
	return h.Unlock(context.Background())
}

// peersStallBound is how long op=lockunlock-uncontended waits for any
// cycle to end before it closes the contender's Client, which fails the
// waiting Acquires: rueidislock gives each key's acquire script 20ms
// (TryNextAfter) and, when two of its three time out on a loaded machine,
// waits for a release of a lock nobody holds. Its Acquires take the
// Background context (a bounded one would add the adapter's and context
// allocations to the client's cost), so without this the benchmark would
// hang until the test's timeout.
const peersStallBound = 30 * time.Second

func benchPeersUncontended(b *testing.B, e *env, c contender.Contender, opt rueidis.ClientOption) {
	e.checkLeftovers(b)
	cl := openContender(b, c, opt)
	ctx := context.Background()
	mus := make([]contender.Mutex, uncontendedGoroutines)
	progress, stop := stallGuard(b, c, cl)
	defer stop()
	cycle := func(g int) error {
		if err := lockUnlock(ctx, mus[g]); err != nil {
			return err
		}
		progress.Store(time.Now().UnixNano())
		return nil
	}
	for g := range mus {
		mus[g] = cl.Mutex(e.name("peers-uncontended", c.Name, g))
		if err := cycle(g); err != nil { // opens the connections, loads the scripts
			b.Fatal(err)
		}
	}
	runCycles(b, e, cycle)
}

// stallGuard closes cl, which fails the waiting Acquires, when no cycle
// ended (progress, UnixNano, which each cycle sets) for peersStallBound,
// until stop is called.
func stallGuard(b *testing.B, c contender.Contender, cl contender.Client) (progress *atomic.Int64, stop func()) {
	progress = new(atomic.Int64)
	progress.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if time.Since(time.Unix(0, progress.Load())) > peersStallBound {
					b.Errorf("%s: no lock+unlock ended for %v: closing the Client to end the waiting Acquires", c.Name, peersStallBound)
					cl.Close()
					return
				}
			}
		}
	}()
	return progress, func() { close(done) }
}

func benchPeersContended(b *testing.B, e *env, c contender.Contender, opt rueidis.ClientOption) {
	e.checkLeftovers(b)
	name := e.name("peers-contended", c.Name)
	mus := make([]contender.Mutex, peersContendedGoroutines)
	clients := make([]contender.Client, peersContendedClients)
	for i := range clients {
		clients[i] = openContender(b, c, opt)
		if err := lockUnlock(context.Background(), clients[i].Mutex(name)); err != nil { // warm-up
			b.Fatal(err)
		}
	}
	for g := range mus {
		mus[g] = clients[g%len(clients)].Mutex(name)
	}

	// The run ends with the b.N-th grant: then the Acquires still waiting
	// are cancelled, so that a waiter whose wake-up was lost does not hold
	// the run up (it shows in max-wait-ms, and in timeouts if it waited
	// past peersAcquireBound).
	var (
		grants, timeouts atomic.Int64
		longest          atomic.Int64 // ns
		wg               sync.WaitGroup
	)
	stop, end := context.WithCancel(context.Background())
	defer end()
	errs := make([]error, len(mus))
	b.ReportAllocs()
	server := e.sampleServer(b)
	b.ResetTimer()
	for g, m := range mus {
		wg.Go(func() {
			for stop.Err() == nil {
				ctx, cancel := context.WithTimeout(stop, peersAcquireBound)
				asked := time.Now()
				h, err := m.Acquire(ctx, fairness.Writer)
				cancel()
				waited := int64(time.Since(asked))
				for cur := longest.Load(); waited > cur && !longest.CompareAndSwap(cur, waited); cur = longest.Load() {
				}
				switch {
				case err == nil:
				case stop.Err() != nil:
					return
				case errors.Is(err, context.DeadlineExceeded):
					timeouts.Add(1)
					continue
				default:
					errs[g] = fmt.Errorf("%s: %w", m.Owner(), err)
					end()
					return
				}
				if err := h.Unlock(context.Background()); err != nil {
					errs[g] = fmt.Errorf("%s unlock: %w", m.Owner(), err)
					end()
					return
				}
				if grants.Add(1) == int64(b.N) {
					end()
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	e.reportServer(b, server)
	reportRate(b, "grants/s")
	b.ReportMetric(float64(timeouts.Load()), "timeouts")
	b.ReportMetric(float64(longest.Load())/float64(time.Millisecond), "max-wait-ms")
	if n := timeouts.Load(); n > 0 {
		b.Logf("%s: %d Acquires were not granted within %v (retried)", c.Name, n, peersAcquireBound)
	}
}

func benchPeersTryLock(b *testing.B, e *env, c contender.Contender, opt rueidis.ClientOption) {
	e.checkLeftovers(b)
	m := openContender(b, c, opt).Mutex(e.name("peers-trylock", c.Name))
	ctx := context.Background()
	try := func() error {
		h, err := m.TryAcquire(ctx, fairness.Writer)
		if err != nil {
			return err
		}
		return h.Unlock(ctx)
	}
	if err := try(); err != nil { // opens the connection, loads the scripts
		b.Fatal(err)
	}
	b.ReportAllocs()
	server := e.sampleServer(b)
	spread(b, 1, func(_ int, next func() bool) error {
		for next() {
			if err := try(); err != nil {
				return err
			}
		}
		return nil
	})
	e.reportServer(b, server)
	reportRate(b, "cycles/s")
}

func benchPeersFresh(b *testing.B, e *env, c contender.Contender, opt rueidis.ClientOption) {
	e.checkLeftovers(b)
	cl := openContender(b, c, opt)
	ctx := context.Background()
	prefix := make([]string, uncontendedGoroutines)
	seq := make([]int, uncontendedGoroutines)
	progress, stop := stallGuard(b, c, cl)
	defer stop()
	cycle := func(g int) error {
		seq[g]++
		if err := lockUnlock(ctx, cl.Mutex(prefix[g]+strconv.Itoa(seq[g]))); err != nil {
			return err
		}
		progress.Store(time.Now().UnixNano())
		return nil
	}
	for g := range prefix {
		prefix[g] = e.name("peers-fresh", c.Name, g) + ":"
		if err := cycle(g); err != nil { // opens the connections, loads the scripts
			b.Fatal(err)
		}
	}
	runCycles(b, e, cycle)
}
