package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
	"github.com/fairrw/rwlock/internal/testkit/leasewatch"
)

// renewalRounds is how many rounds a renewal run measures.
const renewalRounds = 3

// renewalOutcome is what one renewal run measured.
type renewalOutcome struct {
	Leases int `json:"leases"`
	// Rounds measured, and the interval between rounds.
	Rounds     int     `json:"rounds"`
	IntervalMS float64 `json:"interval_ms"`
	// ScriptsPerRound and CommandsPerRound are the Redis calls of one
	// round (INFO commandstats; commands include those scripts ran).
	ScriptsPerRound  float64 `json:"scripts_per_round"`
	CommandsPerRound float64 `json:"commands_per_round"`
	// RoundMS is the time from a round's start to the confirmation of its
	// last reply, where the contender shows it (fairrw: Lease.Deadline);
	// 0 where it does not (a per-lock watchdog has no rounds).
	RoundMS float64 `json:"round_ms"`
	// Lost counts leases that ended while held; -1 where the contender's
	// holds do not tell (no Err method).
	Lost int `json:"lost"`
}

// runRenewal holds n leases of renewalLease (-renewal-lease: 1 s, so that
// fairrw's rounds come every 333ms) on distinct names under one client of
// ct and measures the calls and time of renewalRounds rounds of its
// watchdog.
func runRenewal(ctx context.Context, r *redisEnv, ct contender.Contender, name string, n int, renewalLease time.Duration) (*renewalOutcome, error) {
	c, interval, err := ct.OpenLeased(r.option, renewalLease)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	holds, err := holdMany(ctx, c, name, n)
	defer func() {
		for _, h := range holds {
			if h != nil {
				_ = h.Unlock(context.Background())
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	o := &renewalOutcome{Leases: n, Rounds: renewalRounds, IntervalMS: msOf(interval)}
	sentinel, isLease := holds[0].(*fairrw.Lease)
	var before, after *serverSample
	if isLease {
		// Count whole rounds: from one renewal of the sentinel to the
		// renewalRounds-th after it.
		last, err := leasewatch.NextRound(sentinel, sentinel.Deadline(), renewalLease)
		if err != nil {
			return nil, err
		}
		before = r.sample(ctx)
		var lag time.Duration
		for range renewalRounds {
			d, err := leasewatch.NextRound(sentinel, last, renewalLease)
			if err != nil {
				return nil, err
			}
			// The round started at d - lease; its replies were all in
			// when the sentinel's deadline moved.
			lag += time.Since(d.Add(-renewalLease))
			last = d
		}
		after = r.sample(ctx)
		o.RoundMS = msOf(lag) / renewalRounds
	} else {
		// One timer per lock: count the calls of renewalRounds intervals
		// in steady state.
		fairness.Pause(ctx, interval)
		before = r.sample(ctx)
		fairness.Pause(ctx, renewalRounds*interval)
		after = r.sample(ctx)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if before != nil && after != nil {
		d := after.stats.Sub(before.stats)
		o.ScriptsPerRound = float64(d.Scripts()) / renewalRounds
		o.CommandsPerRound = float64(d.Commands("info")) / renewalRounds
	}
	for _, h := range holds {
		e, ok := h.(interface{ Err() error })
		if !ok {
			o.Lost = -1
			break
		}
		if e.Err() != nil {
			o.Lost++
		}
	}
	return o, nil
}

// holdMany acquires write holds on n distinct names under name, 64 at a
// time; on error it returns the holds it has, for the caller to release.
func holdMany(ctx context.Context, c contender.Client, name string, n int) ([]fairness.Hold, error) {
	holds := make([]fairness.Hold, n)
	const acquirers = 64
	errs := make([]error, acquirers)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for g := range acquirers {
		wg.Go(func() {
			for i := g; i < n && errs[g] == nil; i += acquirers {
				holds[i], errs[g] = c.Mutex(fmt.Sprintf("%s:%d", name, i)).Acquire(ctx, fairness.Writer)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return holds, fmt.Errorf("acquire %d leases: %w", n, err)
		}
	}
	return holds, nil
}
