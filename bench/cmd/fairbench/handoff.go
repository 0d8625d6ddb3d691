package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// blockDelay is how long a waiter is given to block (fail its first
// attempt and start waiting) before the holder releases: far longer than
// the few round trips that takes on loopback.
const blockDelay = 3 * time.Millisecond

// maxBlockDelay caps blockDelay's growth: each handoff whose waiter turns
// out not to have blocked in time (a loaded machine) doubles the delay for
// the next ones.
const maxBlockDelay = 200 * time.Millisecond

// stallAfter is how long a released lock may stay ungranted to its
// blocked waiter before the handoff counts as stalled (a lost wake-up):
// far longer than any polling interval.
const stallAfter = 2 * time.Second

// handoffSample is one handoff: the time from the holder's Unlock
// call to the waiter's grant, and what woke the waiter.
type handoffSample struct {
	Latency time.Duration
	Woken   string
}

// handoffOutcome is what one handoff run recorded.
type handoffOutcome struct {
	samples []handoffSample
	// unblocked counts rounds whose waiter was granted without having
	// waited (it was not blocked yet), left out of the samples.
	unblocked int
	// stalled counts handoffs whose waiter was not granted within
	// stallAfter of the release (a lost wake-up), left out of the samples.
	stalled int
	elapsed time.Duration
	cost    *cost
}

// runHandoff measures handoff latency (measuring.md: the time the next
// waiter was granted minus the time the previous holder's unlock returned,
// given a waiter was blocked) between two owners on two clients that take
// turns: the holder keeps the lock while the other owner asks for it and
// blocks, then releases; for a polling contender, at a random point of its
// polling period. It runs for window, and on until it has
// minSamples samples (polling peers hand off slowly), at most 5 windows.
func runHandoff(ctx context.Context, r *redisEnv, ct contender.Contender, name string, oneClient bool, window time.Duration, minSamples int) (*handoffOutcome, error) {
	var owners [2]contender.Mutex
	var c contender.Client
	for i := range owners {
		if c == nil || !oneClient {
			var err error
			if c, err = ct.Open(r.option); err != nil {
				return nil, err
			}
			defer c.Close()
			if err := warmUp(ctx, c.Mutex(name+":warm-up")); err != nil {
				return nil, err
			}
		}
		owners[i] = c.Mutex(name)
	}
	bound, cancel := context.WithTimeout(ctx, 5*window+10*time.Second)
	defer cancel()
	o := &handoffOutcome{}
	before := r.sample(ctx)
	start := time.Now()
	var held fairness.Hold
	delay := blockDelay
	for turn := 1; ; turn++ {
		el := time.Since(start)
		if (el >= window && len(o.samples) >= minSamples) || el >= 5*window {
			break
		}
		if held == nil { // the start, or after a stall: nobody holds it
			h, err := owners[(turn+1)%2].Acquire(bound, fairness.Writer)
			if err != nil {
				return nil, fmt.Errorf("lock: %w", err)
			}
			held = h
		}
		next, s, err := handOff(bound, held, owners[turn%2], delay+randUpTo(ct.PollEvery))
		if errors.Is(err, errStalled) {
			o.stalled++
			held = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		held = next
		if s.Woken == "" {
			o.unblocked++
			delay = min(2*delay, maxBlockDelay)
			continue
		}
		o.samples = append(o.samples, s)
	}
	o.elapsed = time.Since(start)
	if held != nil {
		if err := held.Unlock(ctx); err != nil {
			return nil, fmt.Errorf("last unlock: %w", err)
		}
	}
	o.cost = costOf(before, r.sample(ctx), int64(len(o.samples)+o.unblocked+1))
	return o, nil
}

// randUpTo returns a uniform random duration in [0, d), or 0.
func randUpTo(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// errStalled is a handoff whose waiter was not granted within stallAfter
// of the release.
var errStalled = errors.New("stalled")

// handOff has waiter ask while held is held, releases held after hold (at
// least blockDelay, for the waiter to block), and returns the waiter's hold
// with the sample.
// When the waiter is not granted within stallAfter of the release, its
// request is cancelled and handOff returns errStalled: nobody holds the
// lock then.
func handOff(ctx context.Context, held fairness.Hold, waiter contender.Mutex, hold time.Duration) (fairness.Hold, handoffSample, error) {
	type grant struct {
		h   fairness.Hold
		at  time.Time
		err error
	}
	got := make(chan grant, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		h, err := waiter.Acquire(wctx, fairness.Writer)
		got <- grant{h, time.Now(), err}
	}()
	select {
	case g := <-got:
		if g.err != nil {
			return nil, handoffSample{}, fmt.Errorf("waiter: %w", g.err)
		}
		return nil, handoffSample{}, errors.New("exclusion violated: the waiter was granted while the holder held the lock")
	case <-time.After(hold):
	}
	// The handoff is timed from the Unlock call: a release that grants
	// the waiter (fairrw's fair policies) may let it hold before the
	// Unlock returns, and the release's own round trip is part of the
	// handoff for everyone.
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		<-got // the waiter ends with ctx at the latest
		return nil, handoffSample{}, fmt.Errorf("holder unlock: %w", err)
	}
	var g grant
	select {
	case g = <-got:
	case <-time.After(stallAfter):
		cancel()
		if g = <-got; g.err != nil {
			return nil, handoffSample{}, errStalled
		}
	}
	if g.err != nil {
		return nil, handoffSample{}, fmt.Errorf("waiter: %w", g.err)
	}
	return g.h, handoffSample{Latency: g.at.Sub(released), Woken: fairness.WokenBy(g.h)}, nil
}
