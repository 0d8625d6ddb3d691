package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// outcome is what one closed-loop run of a scenario by a contender
// recorded.
type outcome struct {
	start   time.Time
	window  time.Duration
	elapsed time.Duration
	rec     *fairness.Recorder
	// grants counts every grant of the run, those after the window
	// included: the denominator of the Redis cost, which is counted over
	// the whole run.
	grants int64
	cost   *cost // nil where Redis has no INFO commandstats
}

// runLoop runs the closed-loop scenario s by ct on the lock name (or, for
// a scenario with distinct names, one name per worker under it). Requests
// asked within window are recorded, each bounded by a context of the
// window's length (fairness.Loop). Any lock error (other than a recorded
// timeout) ends the run with an error.
func runLoop(ctx context.Context, r *redisEnv, s scenario, ct contender.Contender, name string, window time.Duration) (*outcome, error) {
	var clients []contender.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var workers []*fairness.Worker
	n := 0
	for i := range s.classes {
		cl := &s.classes[i]
		own := make([]contender.Client, cl.clients)
		for j := range own {
			if s.oneClient && len(clients) > 0 {
				own[j] = clients[0] // every class on the one client
				continue
			}
			c, err := ct.Open(r.option)
			if err != nil {
				return nil, err
			}
			clients = append(clients, c)
			own[j] = c
			if err := warmUp(ctx, c.Mutex(name+":warm-up")); err != nil {
				return nil, err
			}
		}
		for j := range cl.workers {
			lock := name
			if s.distinct {
				lock = fmt.Sprintf("%s:%d", name, n)
			}
			n++
			workers = append(workers, &fairness.Worker{
				Class: cl.kind, Index: j, Mutex: own[j%len(own)].Mutex(lock),
				Hold: cl.hold, Think: cl.thinkRule(), ReadShare: cl.readShare,
			})
		}
	}
	var grants atomic.Int64
	lp := &fairness.Loop{Window: window, Rec: new(fairness.Recorder),
		OnGrant: func(*fairness.Worker, fairness.Class, fairness.Hold) func() {
			grants.Add(1)
			return func() {}
		}}
	before := r.sample(ctx)
	start, err := lp.Run(ctx, workers)
	if err != nil {
		return nil, err
	}
	o := &outcome{start: start, window: window, elapsed: time.Since(start), rec: lp.Rec, grants: grants.Load()}
	o.cost = costOf(before, r.sample(ctx), o.grants)
	return o, nil
}

// thinkRule is the class's pause after a release.
func (c *class) thinkRule() func(time.Duration) time.Duration {
	switch {
	case c.period > 0:
		return fairness.PeriodThink(c.period)
	case c.thinkMax > 0:
		return fairness.UniformThink(c.thinkMin, c.thinkMax)
	default:
		return nil
	}
}

// warmUp loads a contender's scripts (and opens its connections) with one
// write lock+unlock.
func warmUp(ctx context.Context, m contender.Mutex) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, err := m.Acquire(ctx, fairness.Writer)
	if err != nil {
		return fmt.Errorf("warm-up lock: %w", err)
	}
	if err := h.Unlock(ctx); err != nil {
		return fmt.Errorf("warm-up unlock: %w", err)
	}
	return nil
}
