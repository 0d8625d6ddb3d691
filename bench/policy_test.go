package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// throughputWorkload is a PolicyThroughput variant: goroutines, each its
// own handle, spread over 2 Clients, on names lock names, looping
// lock+unlock without hold time; readPercent of the cycles are reads.
type throughputWorkload struct {
	name        string
	goroutines  int
	names       int
	readPercent int
}

var throughputWorkloads = []throughputWorkload{
	{name: "mix=write", goroutines: 16, names: 4},
	{name: "mix=read90", goroutines: 16, names: 4, readPercent: 90},
	{name: "contention=none", goroutines: 64, names: 64},
}

const (
	throughputClients = 2
	// throughputTimeout bounds one acquire: a lock that never grants fails
	// the benchmark instead of hanging it.
	throughputTimeout = time.Minute
)

// BenchmarkPolicyThroughput: lock+unlock cycles/s of each policy, and the
// script calls Redis ran per grant, next to policy=redisson in the same run.
func BenchmarkPolicyThroughput(b *testing.B) {
	e := newEnv(b)
	for _, w := range throughputWorkloads {
		for _, pc := range policyCases {
			b.Run(fmt.Sprintf("policy=%s/%s", pc.name, w.name), func(b *testing.B) {
				benchPolicyThroughput(b, e, pc, w)
			})
		}
	}
}

func benchPolicyThroughput(b *testing.B, e *env, pc policyCase, w throughputWorkload) {
	e.checkLeftovers(b)
	opt := e.option(0, false)
	clients := make([]*fairrw.Client, throughputClients)
	for i := range clients {
		clients[i] = newClient(b, opt, fairrw.WithPolicy(pc.policy))
	}
	handles := make([]*fairrw.RWMutex, w.goroutines)
	checks := make([]holdCheck, w.names)
	for g := range handles {
		handles[g] = clients[g%len(clients)].RWMutex(e.name("throughput", pc.name, w.name, g%w.names))
		warmUp(b, handles[g])
	}
	locals := make([]wakePaths, w.goroutines) // per goroutine, merged after
	before := e.sampleServer(b)
	spread(b, w.goroutines, func(g int, next func() bool) error {
		local := make(wakePaths)
		locals[g] = local
		rng := rand.New(rand.NewPCG(uint64(g), 1))
		for next() {
			mode := fairrw.Write
			if rng.IntN(100) < w.readPercent {
				mode = fairrw.Read
			}
			woken, err := cycle(handles[g], mode, &checks[g%w.names])
			if err != nil {
				return err
			}
			local[woken]++
		}
		return nil
	})
	after := e.sampleServer(b)
	for i := range checks {
		checks[i].verify(b)
	}
	reportRate(b, "cycles/s")
	b.ReportMetric(float64(after.scripts-before.scripts)/float64(b.N), "scripts/grant")
	b.ReportMetric(micros(after.cpu-before.cpu)/float64(b.N), "redis-cpu-µs/grant")
	paths := make(wakePaths)
	for _, local := range locals {
		for p, n := range local {
			paths[p] += n
		}
	}
	paths.report(b)
}

// cycle takes m in mode and releases it at once, checked by check. It
// returns the grant's Lease.WokenBy.
func cycle(m *fairrw.RWMutex, mode fairrw.Mode, check *holdCheck) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), throughputTimeout)
	defer cancel()
	l, err := acquire(ctx, m, mode)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", mode, hidden.Name(m), err)
	}
	check.enter(mode, l.Token())
	check.exit(mode)
	if err := l.Unlock(ctx); err != nil {
		return "", fmt.Errorf("%s %s unlock: %w", mode, l.Owner(), err)
	}
	return hidden.WokenBy(l), nil
}

// idleHold is how long the holder of BenchmarkIdleWaiter keeps the lock
// while a waiter waits: one op.
const idleHold = 500 * time.Millisecond

// BenchmarkIdleWaiter: one Client holds the write of a lock for idleHold
// while one waiter on another Client asks for it in mode. Nothing changes
// the lock meanwhile, so after its first failed attempt the waiter should
// send nothing: scripts/s is the script calls Redis ran per second of the
// hold (from INFO commandstats, the first attempt excluded), the cost of a
// waiter that is woken for nothing.
func BenchmarkIdleWaiter(b *testing.B) {
	e := newEnv(b)
	for _, pc := range policyCases {
		for _, tr := range transports {
			for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
				b.Run(fmt.Sprintf("policy=%s/transport=%s/waiter=%s", pc.name, tr.name, mode), func(b *testing.B) {
					benchIdleWaiter(b, e, pc, tr, mode)
				})
			}
		}
	}
}

func benchIdleWaiter(b *testing.B, e *env, pc policyCase, tr transport, mode fairrw.Mode) {
	e.checkLeftovers(b)
	opt := e.option(0, tr.disableCache)
	name := e.name("idle-waiter", pc.name, tr.name, mode)
	holder := newClient(b, opt, fairrw.WithPolicy(pc.policy)).RWMutex(name)
	waiter := newClient(b, opt, fairrw.WithPolicy(pc.policy)).RWMutex(name)
	warmUp(b, holder)
	warmUp(b, waiter)
	paths := make(wakePaths)
	var scripts int64
	b.ResetTimer()
	for range b.N {
		n, woken, err := idleWait(b, e, holder, waiter, mode)
		if err != nil {
			b.Fatal(err)
		}
		scripts += n
		paths[woken]++
	}
	b.StopTimer()
	b.ReportMetric(float64(scripts)/(idleHold.Seconds()*float64(b.N)), "scripts/s")
	if paths["timer"] > 0 || paths[""] > 0 {
		b.Logf("waiter woken by %v", paths)
	}
}

// idleWait holds holder's write while waiter waits in mode, and returns the
// script calls Redis ran during the hold (after a settling delay for the
// waiter's first attempt) and the grant's Lease.WokenBy.
func idleWait(b *testing.B, e *env, holder, waiter *fairrw.RWMutex, mode fairrw.Mode) (int64, string, error) {
	ctx := context.Background()
	l, err := holder.Lock(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("holder: %w", err)
	}
	type grant struct {
		l   *fairrw.Lease
		err error
	}
	got := make(chan grant, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, throughputTimeout)
		defer cancel()
		wl, err := acquire(wctx, waiter, mode)
		got <- grant{wl, err}
	}()
	time.Sleep(50 * time.Millisecond) // the waiter's first attempt and subscription
	before := e.sampleServer(b)
	time.Sleep(idleHold)
	after := e.sampleServer(b)
	err = l.Unlock(ctx)
	g := <-got
	if err = errors.Join(err, g.err); err != nil {
		return 0, "", err
	}
	return after.scripts - before.scripts, hidden.WokenBy(g.l), g.l.Unlock(ctx)
}
