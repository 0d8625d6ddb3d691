package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	bare "github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/bench/internal/contender"
)

// A run (one scenario, one contender, one repetition) that fails or
// stalls is reported and skipped: the others still run, print and chart.
// One misbehaving peer library must not cost the user the whole run.
var (
	// errTimedOut is a run that returned only after its time limit
	// cancelled it.
	errTimedOut = errors.New("time limit passed")
	// errAbandoned is a run that had not returned stallGrace after its
	// limit: it ignores its context; its goroutines are left behind.
	errAbandoned = errors.New("stalled past its time limit: abandoned")
)

// maxStallGrace bounds how long a run is waited for after its limit
// cancelled it, before it is abandoned.
const maxStallGrace = 5 * time.Second

// failure is a run that ended without a result.
type failure struct {
	Scenario  string `json:"scenario"`
	Contender string `json:"contender"`
	Rep       int    `json:"rep"`
	// Stalled is true when the run reached its time limit; the contender
	// is then skipped in the scenarios after.
	Stalled bool    `json:"stalled"`
	AfterS  float64 `json:"after_s"`
	Error   string  `json:"error"`
}

// runAll runs every scenario of opt by every contender that can run it
// (and, in server-cost, by every baseline pair first),
// rep.Settings.Repetitions times each, and returns the medians by
// scenario. Failed and stalled runs are recorded in rep.Failures and left
// out: a contender that fails a repetition is skipped for the rest of the
// scenario, one that stalls for the rest of the run. When ctx ends
// (Ctrl-C) it returns what it has, with rep.Interrupted set.
func runAll(ctx context.Context, r *redisEnv, opt *options, rep *report, stderr io.Writer) [][]result {
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	bySc := make([][]result, len(opt.scenarios))
	stalled := map[string]string{} // contender -> the scenario it stalled in
	for i, s := range opt.scenarios {
		for _, e := range entrantsOf(r, s, opt) {
			if ctx.Err() != nil {
				rep.Interrupted = true
				return bySc
			}
			if ct := e.contender; ct != nil {
				if !s.runs(*ct) {
					continue
				}
				if where, ok := stalled[ct.Name]; ok {
					fmt.Fprintf(stderr, "%s / %s: skipped: it stalled in %s\n", s.name, ct.Name, where)
					continue
				}
				if err := ct.Supports(r.option, r.Kind == kindMiniredis); err != nil {
					fmt.Fprintf(stderr, "%s / %s: skipped: %v\n", s.name, ct.Name, err)
					continue
				}
			}
			reps, f := runReps(ctx, s, e, runID, opt, stderr)
			if f != nil {
				if ctx.Err() != nil { // Ctrl-C, not the contender's fault
					rep.Interrupted = true
					return bySc
				}
				rep.Failures = append(rep.Failures, *f)
				if f.Stalled && e.contender != nil {
					stalled[e.name] = s.name
				}
				continue
			}
			med := medianOf(reps)
			bySc[i] = append(bySc[i], med)
			rep.Results = append(rep.Results, med)
			if opt.reps > 1 {
				rep.Runs = append(rep.Runs, reps...)
			}
		}
		if s.kind == serverCost {
			// Results share their ServerCost: rep.Results sees the ratios.
			setServerCostRatios(bySc[i])
		}
	}
	return bySc
}

// entrant is what runs a scenario once per repetition: a contender, or a
// baseline pair (server-cost).
type entrant struct {
	name      string
	contender *contender.Contender // nil for a baseline
	run       func(ctx context.Context, name string, rep int) (result, error)
}

// entrantsOf returns who runs s: in server-cost, the baseline pairs first
// (the ratios' references), then every contender of opt.
func entrantsOf(r *redisEnv, s scenario, opt *options) []entrant {
	var out []entrant
	if s.kind == serverCost {
		for _, p := range bare.Pairs() {
			out = append(out, entrant{name: p.Name, run: func(ctx context.Context, name string, rep int) (result, error) {
				return runBaselineCost(ctx, r, s, p, name, rep, opt)
			}})
		}
	}
	for _, ct := range opt.contenders {
		out = append(out, entrant{name: ct.Name, contender: &ct, run: func(ctx context.Context, name string, rep int) (result, error) {
			return runOne(ctx, r, s, ct, name, rep, opt)
		}})
	}
	return out
}

// runReps runs s by e opt.reps times, each bounded by the scenario's
// limit, and returns the results, or the first failure.
func runReps(ctx context.Context, s scenario, e entrant, runID string, opt *options, stderr io.Writer) ([]result, *failure) {
	limit := s.limit(opt.window, opt.leases)
	if opt.timeout > 0 {
		limit = opt.timeout
	}
	var reps []result
	for k := 1; k <= opt.reps; k++ {
		fmt.Fprintf(stderr, "%s / %s", s.name, e.name)
		if opt.reps > 1 {
			fmt.Fprintf(stderr, " (%d of %d)", k, opt.reps)
		}
		fmt.Fprint(stderr, " ... ")
		name := fmt.Sprintf("fairbench:%s:%s:%s:%d", runID, s.name, e.name, k)
		start := time.Now()
		res, err := guarded(ctx, limit, func(ctx context.Context) (result, error) {
			return e.run(ctx, name, k)
		})
		if err != nil {
			stalled := errors.Is(err, errTimedOut) || errors.Is(err, errAbandoned)
			f := &failure{Scenario: s.name, Contender: e.name, Rep: k, Stalled: stalled,
				AfterS: time.Since(start).Seconds(), Error: err.Error()}
			fmt.Fprintf(stderr, "failed after %.1fs: %v\n", f.AfterS, err)
			return nil, f
		}
		fmt.Fprintf(stderr, "done in %.1fs%s\n", res.ElapsedS, progressNote(res))
		reps = append(reps, res)
	}
	return reps, nil
}

// guarded calls f with a context that ends after limit (or with ctx). If
// f returns an error once the limit has passed, the error wraps
// errTimedOut; if f has not returned min(limit, maxStallGrace) after the
// limit, guarded returns an error wrapping errAbandoned and leaves f
// running.
func guarded(ctx context.Context, limit time.Duration, f func(context.Context) (result, error)) (result, error) {
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	type outcome struct {
		res result
		err error
	}
	done := make(chan outcome, 1) // f's goroutine never blocks on it
	go func() {
		res, err := f(rctx)
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-rctx.Done():
		grace := min(limit, maxStallGrace)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case o = <-done:
		case <-t.C:
			if ctx.Err() != nil {
				return result{}, fmt.Errorf("interrupted: %w", ctx.Err())
			}
			return result{}, fmt.Errorf("%w (limit %v, then %v more)", errAbandoned, limit, grace)
		}
	}
	switch {
	case o.err == nil:
		return o.res, nil
	case ctx.Err() == nil && rctx.Err() != nil:
		return result{}, fmt.Errorf("%w (%v): %w", errTimedOut, limit, o.err)
	}
	return result{}, o.err
}
