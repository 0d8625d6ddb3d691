package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// An arrival scenario (cohort-yield) measures what a writer of another
// Client waits for behind one Client's stream of writes: its wait in ms,
// and in holds of the stream granted while it waited. A lock that passes
// the write among one Client's own writers (fairrw's cohorts) serves the
// stream first; how many of its holds come before the other Client's
// writer is the bound that matters to it, beside the wait in time.
// classes[0] is the stream (one client), classes[1] the arriving writer
// (a client of its own), which thinks between its requests.

// arrivalOutcome is one arrival run's figures: the arriving writer's
// requests, their waits, and the stream's holds granted during each.
type arrivalOutcome struct {
	Arrivals  int     `json:"arrivals"`
	Timeouts  int     `json:"timeouts"`
	WaitP50MS float64 `json:"wait_p50_ms"`
	WaitP99MS float64 `json:"wait_p99_ms"`
	WaitMaxMS float64 `json:"wait_max_ms"`
	// Holds are the stream's holds granted from the arriving writer's
	// call to its grant (or its timeout), per request: the holds it waited
	// for besides the one under way when it asked.
	HoldsP50 float64 `json:"holds_p50"`
	HoldsP99 float64 `json:"holds_p99"`
	HoldsMax int     `json:"holds_max"`
	// StreamGrantsPerS is the stream's grants within the window, per
	// second.
	StreamGrantsPerS float64 `json:"stream_grants_per_s"`
}

// runArrival runs the arrival scenario s by ct on the lock name for
// window, and returns its figures. Any lock error other than a request's
// timeout ends it with an error.
func runArrival(ctx context.Context, r *redisEnv, s scenario, ct contender.Contender, name string, window time.Duration) (*arrivalOutcome, error) {
	if len(s.classes) != 2 {
		return nil, errors.New("an arrival scenario has two classes: the stream and the arriving writer")
	}
	stream, arriving := s.classes[0], s.classes[1]
	var clients []contender.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range 2 {
		c, err := ct.Open(r.option)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
		if err := warmUp(ctx, c.Mutex(name+":warm-up")); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		granted  []time.Time
		failures = make(chan error, stream.workers+1)
		wg       sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(window)
	for range stream.workers {
		m := clients[0].Mutex(name)
		wg.Go(func() {
			for ctx.Err() == nil {
				h, err := m.Acquire(ctx, fairness.Writer)
				if err != nil {
					if ctx.Err() == nil {
						failures <- fmt.Errorf("stream writer: %w", err)
						cancel()
					}
					return
				}
				now := time.Now()
				mu.Lock()
				granted = append(granted, now)
				mu.Unlock()
				fairness.Pause(ctx, stream.hold)
				if err := h.Unlock(context.Background()); err != nil {
					failures <- fmt.Errorf("stream writer unlock: %w", err)
					cancel()
					return
				}
			}
		})
	}
	type request struct {
		asked, granted time.Time
		timedOut       bool
	}
	var reqs []request
	think := arriving.thinkRule()
	m := clients[1].Mutex(name)
	var err error
	for time.Now().Before(end) && ctx.Err() == nil {
		if think != nil {
			fairness.Pause(ctx, think(time.Since(start)))
		}
		asked := time.Now()
		actx, acancel := context.WithTimeout(ctx, window)
		h, aerr := m.Acquire(actx, fairness.Writer)
		acancel()
		if aerr != nil {
			if ctx.Err() == nil && errors.Is(aerr, context.DeadlineExceeded) {
				reqs = append(reqs, request{asked: asked, granted: asked.Add(window), timedOut: true})
				continue
			}
			if ctx.Err() == nil {
				err = fmt.Errorf("arriving writer: %w", aerr)
			}
			break
		}
		reqs = append(reqs, request{asked: asked, granted: time.Now()})
		fairness.Pause(ctx, arriving.hold)
		if uerr := h.Unlock(context.Background()); uerr != nil {
			err = fmt.Errorf("arriving writer unlock: %w", uerr)
			break
		}
	}
	cancel()
	wg.Wait()
	close(failures)
	if ferr := <-failures; ferr != nil {
		return nil, ferr
	}
	if err != nil {
		return nil, err
	}
	o := &arrivalOutcome{Arrivals: len(reqs)}
	var waits []time.Duration
	var holds []float64
	for _, q := range reqs {
		if q.timedOut {
			o.Timeouts++
		}
		waits = append(waits, q.granted.Sub(q.asked))
		n := 0
		for _, g := range granted {
			if g.After(q.asked) && g.Before(q.granted) {
				n++
			}
		}
		holds = append(holds, float64(n))
		o.HoldsMax = max(o.HoldsMax, n)
	}
	for _, g := range granted {
		if g.Before(end) {
			o.StreamGrantsPerS++
		}
	}
	o.StreamGrantsPerS /= window.Seconds()
	slices.Sort(waits)
	slices.Sort(holds)
	o.WaitP50MS, o.WaitP99MS = msOf(fairness.Percentile(waits, 50)), msOf(fairness.Percentile(waits, 99))
	if len(waits) > 0 {
		o.WaitMaxMS = msOf(waits[len(waits)-1])
	}
	o.HoldsP50, o.HoldsP99 = nearestRank(holds, 50), nearestRank(holds, 99)
	return o, nil
}

// nearestRank is the nearest-rank p-th percentile of sorted (ascending),
// as fairness.Percentile: sorted[ceil(p/100*n)-1]; 0 when empty.
func nearestRank(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := max(1, min(int(math.Ceil(p/100*float64(n))), n))
	return sorted[rank-1]
}

// writeArrival prints an arrival scenario: one row per contender.
func writeArrival(w io.Writer, results []result) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "other Client's writer\tasked\tt/o\twait p50 ms\tp99\tmax\tholds p50\tp99\tmax\tstream grants/s\t")
	for _, r := range results {
		a := r.Arrival
		if a == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%.0f\t%.0f\t%d\t%.0f\t\n", r.Contender, a.Arrivals, a.Timeouts,
			f1(a.WaitP50MS), f1(a.WaitP99MS), f1(a.WaitMaxMS), a.HoldsP50, a.HoldsP99, a.HoldsMax, a.StreamGrantsPerS)
	}
	return tw.Flush()
}

// arrivalVerdict is the verdict of an arrival scenario: for each
// contender, the most holds of the stream the other Client's writer waited
// for, and its p99 wait, fewest holds first.
func arrivalVerdict(s scenario, results []result) (verdictLine, bool) {
	var rs []result
	for _, r := range results {
		if r.Arrival != nil && r.Arrival.Arrivals > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return verdictLine{}, false
	}
	slices.SortStableFunc(rs, func(a, b result) int { return a.Arrival.HoldsMax - b.Arrival.HoldsMax })
	var parts []string
	for _, r := range rs {
		a := r.Arrival
		part := fmt.Sprintf("%s at most %d holds (p99 wait %sms)", r.Contender, a.HoldsMax, f1(a.WaitP99MS))
		if a.Timeouts > 0 {
			part += fmt.Sprintf(", %d timed out", a.Timeouts)
		}
		parts = append(parts, part)
	}
	return verdictLine{Topic: s.name, Text: "another Client's writer behind a busy Client's stream waited for: " + strings.Join(parts, "; ")}, true
}
