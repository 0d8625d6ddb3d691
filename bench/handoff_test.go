package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

const (
	// handoffLease is the holder's and the waiter's explicit lease: no
	// watchdog renewal runs (it would disturb the script-call count that
	// tells when the waiter is blocked), and a waiter that is never woken
	// still gets the lock by its PTTL timer within this time.
	handoffLease = 2 * time.Second
	// handoffTimeout bounds each waiter's Lock and each wait for the waiter
	// to block.
	handoffTimeout = 10 * time.Second
)

// BenchmarkHandoff measures the handoff latency H: from the holder's Unlock
// returning to the blocked waiter's Lock returning, holder and waiter on
// separate Clients. See the package doc for the metrics.
func BenchmarkHandoff(b *testing.B) {
	e := newEnv(b)
	for _, tr := range transports {
		for _, hw := range []struct{ holder, waiter fairrw.Mode }{
			{fairrw.Write, fairrw.Write},
			{fairrw.Write, fairrw.Read},
			{fairrw.Read, fairrw.Write},
		} {
			b.Run(fmt.Sprintf("transport=%s/holder=%s/waiter=%s", tr.name, hw.holder, hw.waiter), func(b *testing.B) {
				benchHandoff(b, e, tr, hw.holder, hw.waiter)
			})
		}
	}
}

type granted struct {
	lease *fairrw.Lease
	at    time.Time
	err   error
}

func benchHandoff(b *testing.B, e *env, tr transport, holderMode, waiterMode fairrw.Mode) {
	e.checkLeftovers(b)
	opt := e.option(0, tr.disableCache)
	holder := newClient(b, opt)
	waiter := newClient(b, opt)
	name := e.name("handoff", tr.name, holderMode, waiterMode)
	hm, wm := holder.RWMutex(name), waiter.RWMutex(name)
	channel := compat.Channel(name)
	lease := fairrw.WithLease(handoffLease)
	ctx := context.Background()

	warmUp(b, hm)
	warmUp(b, wm)

	samples := make([]time.Duration, 0, b.N)
	paths := make(wakePaths)
	done := make(chan granted, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		hl, err := acquire(ctx, hm, holderMode, lease)
		if err != nil {
			b.Fatalf("holder: %v", err)
		}
		before, err := commandStats(ctx, e.raw)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
			defer cancel()
			l, err := acquire(wctx, wm, waiterMode, lease)
			done <- granted{lease: l, at: time.Now(), err: err}
		}()
		if err := awaitBlocked(ctx, e, channel, before.Scripts(), done); err != nil {
			b.Fatalf("waiter did not block: %v", err)
		}
		if err := hl.Unlock(ctx); err != nil {
			b.Fatalf("holder unlock: %v", err)
		}
		unlocked := time.Now()
		g := <-done
		if g.err != nil {
			b.Fatalf("waiter (paths so far: %v): %v", paths, g.err)
		}
		samples = append(samples, g.at.Sub(unlocked))
		paths[hidden.WokenBy(g.lease)]++
		if err := g.lease.Unlock(ctx); err != nil {
			b.Fatalf("waiter unlock: %v", err)
		}
	}
	b.StopTimer()

	slices.Sort(samples)
	b.ReportMetric(micros(fairness.Percentile(samples, 50)), "p50-µs")
	b.ReportMetric(micros(fairness.Percentile(samples, 99)), "p99-µs")
	b.ReportMetric(micros(samples[len(samples)-1]), "max-µs")
	paths.report(b)
	if n := paths["timer"] + paths[""]; n > 0 {
		b.Logf("%d of %d handoffs not woken by a notification (%v); slowest %v", n, b.N, paths, samples[len(samples)-1])
	}
}

// awaitBlocked returns once the waiter is blocked: its Client subscribed to
// the lock's channel, and Redis ran both of its failed attempts (the one
// before joining the wait and the one after the subscription was confirmed)
// since Redis had run base script calls. Nothing else runs scripts meanwhile:
// the holder is idle and no lease has a watchdog. This relies on fairrw's
// wait loop making exactly those two attempts before it first sleeps; should
// that change, this fails with "waiter did not block" after handoffTimeout
// rather than measuring a waiter that was not waiting.
func awaitBlocked(ctx context.Context, e *env, channel string, base int64, done <-chan granted) error {
	ctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	subscribed := false
	poll := time.NewTimer(time.Hour)
	defer poll.Stop()
	for {
		if !subscribed {
			n, err := e.raw.Do(ctx, e.raw.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
			if err != nil {
				return fmt.Errorf("PUBSUB NUMSUB: %w", err)
			}
			subscribed = n[channel] >= 1
		}
		if subscribed {
			stats, err := commandStats(ctx, e.raw)
			if err != nil {
				return err
			}
			if stats.Scripts() >= base+2 {
				return nil
			}
		}
		poll.Reset(20 * time.Microsecond)
		select {
		case g := <-done:
			return fmt.Errorf("Lock returned while the lock was held (lease %v, err %v)", g.lease != nil, g.err)
		case <-ctx.Done():
			return fmt.Errorf("subscribed=%v: %w", subscribed, ctx.Err())
		case <-poll.C:
		}
	}
}
