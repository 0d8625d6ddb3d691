package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/fairrw/rwlock/bench/internal/chart"
	"github.com/fairrw/rwlock/bench/internal/contender"
)

// queueCostTarget is the bound on how much the Redis CPU per grant
// of a fair policy may grow from the shortest queue to the longest: a
// grant must not cost in proportion to the writers queued behind it.
const queueCostTarget = 1.5

// queueOutcome is one queue length of a queue-cost run: a closed loop of
// Writers writers on one name.
type queueOutcome struct {
	Writers int `json:"writers"`
	Clients int `json:"clients"`
	// Requests asked within the window, and those of them timed out.
	Requests int `json:"requests"`
	Timeouts int `json:"timeouts"`
	// GrantsPerS is the grants within the window per second of window.
	GrantsPerS float64 `json:"grants_per_s"`
	WaitP50MS  float64 `json:"wait_p50_ms"`
	WaitP99MS  float64 `json:"wait_p99_ms"`
	// Cost is the Redis work per grant over the whole run; absent where
	// Redis has no INFO commandstats (miniredis).
	Cost *cost `json:"cost,omitempty"`
}

// runQueueCost runs the queue-cost scenario s by ct once: one closed loop
// per queue length, each on its own name under name, one after the other
// so that each run's server CPU is its own.
func runQueueCost(ctx context.Context, r *redisEnv, s scenario, ct contender.Contender, name string, rep int, opt *options) (result, error) {
	res := result{Scenario: s.name, Contender: ct.Name, Rep: rep, WindowS: opt.window.Seconds()}
	start := time.Now()
	for _, q := range s.queues {
		// A closed-loop scenario of the one class: runLoop and
		// summarizeLoop measure it as they do "contended".
		one := scenario{name: s.name, classes: []class{q}}
		o, err := runLoop(ctx, r, one, ct, fmt.Sprintf("%s:%d", name, q.workers), opt.window)
		if err != nil {
			return result{}, fmt.Errorf("%d writers: %w", q.workers, err)
		}
		w := summarizeLoop(one, ct.Name, rep, o, opt.bound).Classes["writer"]
		res.Queue = append(res.Queue, &queueOutcome{
			Writers: q.workers, Clients: q.clients, Requests: w.Requests, Timeouts: w.Timeouts,
			GrantsPerS: w.GrantsPerS, WaitP50MS: w.WaitP50MS, WaitP99MS: w.WaitP99MS, Cost: o.cost,
		})
	}
	res.ElapsedS = time.Since(start).Seconds()
	res.RedisCPUGrowth = cpuGrowth(res.Queue)
	return res, nil
}

// cpuGrowth is the redis-server CPU per grant at the longest queue (the
// last) over that at the shortest (the first); 0 when either is unknown.
func cpuGrowth(queue []*queueOutcome) float64 {
	if len(queue) < 2 {
		return 0
	}
	first, last := queue[0].Cost, queue[len(queue)-1].Cost
	if first == nil || last == nil || first.RedisCPUUsecPerGrant <= 0 {
		return 0
	}
	return last.RedisCPUUsecPerGrant / first.RedisCPUUsecPerGrant
}

// medianQueue is the outcome-by-outcome median of the queue-cost
// repetitions reps (all of one scenario and contender, so with the same
// queue lengths).
func medianQueue(reps []result) []*queueOutcome {
	var out []*queueOutcome
	for i := range reps[0].Queue {
		var all []*queueOutcome
		var costs []*cost
		for _, r := range reps {
			all = append(all, r.Queue[i])
			costs = append(costs, r.Queue[i].Cost)
		}
		m := medianFields(all)
		// medianFields keeps the first repetition's pointer fields.
		m.Cost = medianCost(costs)
		out = append(out, m)
	}
	return out
}

// writeQueueCost prints the queue-cost table: one row per contender and
// queue length, and on the longest queue's row the growth of the Redis CPU
// per grant from the shortest.
func writeQueueCost(w io.Writer, s scenario, results []result) error {
	growth := "µs/grant growth"
	if n := len(s.queues); n >= 2 {
		growth = fmt.Sprintf("µs/grant %d÷%d", s.queues[n-1].workers, s.queues[0].workers)
	}
	tw := newTable(w)
	// The clients and the p50 are in the JSON only: the table must fit in
	// 120 columns, and the scenario's heading gives the clients.
	fmt.Fprintln(tw, "queue cost\twriters\tgrants/s\tW p99 ms\tW t/o\tscripts/grant\tcmds/grant\tredis µs/grant\t"+growth+"\t")
	for _, r := range results {
		for i, q := range r.Queue {
			row := []string{r.Contender, fmt.Sprint(q.Writers), fmt.Sprintf("%.0f", q.GrantsPerS),
				f1(q.WaitP99MS), fmt.Sprint(q.Timeouts)}
			row = append(row, costCells(q.Cost)...)
			switch {
			case i < len(r.Queue)-1: // the ratio is the longest queue's
				row = append(row, "-")
			case r.RedisCPUGrowth > 0:
				row = append(row, fmt.Sprintf("%.2f", r.RedisCPUGrowth))
			default:
				row = append(row, "n/a")
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	return tw.Flush()
}

// queueCost draws the queue-cost scenario's bars: the Redis CPU per
// grant and the grants per second of every contender at each queue length.
func (f *figures) queueCost(s scenario, results []result) error {
	var cpu, grants []chart.Bar
	for _, r := range results {
		for _, q := range r.Queue {
			label := fmt.Sprintf("%s, %d writers", r.Contender, q.Writers)
			us := math.NaN() // drawn as n/a: no commandstats
			if q.Cost != nil {
				us = q.Cost.RedisCPUUsecPerGrant
			}
			slot := f.slots[r.Contender]
			cpu = append(cpu, chart.Bar{Label: label, Value: us, Slot: slot})
			grants = append(grants, chart.Bar{Label: label, Value: q.GrantsPerS, Note: fmt.Sprintf("p99 %.0fms", q.WaitP99MS), Slot: slot})
		}
	}
	if err := f.draw(s.name+"-redis-cpu", s.name+": redis-server CPU per grant by queue length (lower is better)",
		func(p, title string) error { return chart.Bars(p, title, "µs/grant", cpu, true) }); err != nil {
		return err
	}
	return f.draw(s.name+"-throughput", s.name+": grants per second by queue length (higher is better), wait p99 beside it",
		func(p, title string) error { return chart.Bars(p, title, "grants/s", grants, false) })
}
