package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fairrw/rwlock/internal/fairness"
)

// writeFigures draws the charts of the results into dir, each as SVG and PNG, (created if need
// be) and returns the files written. Every closed-loop scenario gets the
// wait distribution of each class and its throughput; the fairness
// scenarios also get waits over time; handoff, renewal and queue-cost get
// bars.
func writeFigures(dir string, picked []scenario, bySc [][]result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	// Each chart is written as SVG (sharp at any size) and PNG (fonts
	// rendered: it looks the same everywhere).
	draw := func(name string, f func(path string) error) error {
		for _, ext := range []string{".svg", ".png"} {
			path := filepath.Join(dir, name+ext)
			if err := f(path); err != nil {
				return fmt.Errorf("%s: %w", name+ext, err)
			}
			files = append(files, path)
		}
		return nil
	}
	for i, s := range picked {
		results := bySc[i]
		if len(results) == 0 {
			continue
		}
		var err error
		switch s.kind {
		case handoff:
			err = draw("handoff", func(p string) error { return handoffChart(p, results) })
		case renewal:
			err = renewalCharts(results, draw)
		case queueCost:
			err = queueCostCharts(s, results, draw)
		default:
			err = loopCharts(s, results, draw)
		}
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// loopCharts draws a closed-loop scenario's charts.
func loopCharts(s scenario, results []result, draw func(string, func(string) error) error) error {
	for _, class := range []fairness.Class{fairness.Writer, fairness.Reader} {
		var series []waitSeries
		var points []timeSeries
		for _, r := range results {
			if r.Classes[class.String()] == nil {
				continue
			}
			var reqs []fairness.Request
			for _, q := range r.samples {
				if q.Class == class {
					reqs = append(reqs, q)
				}
			}
			ws, ts := waitSeriesOf(r.Contender, reqs), timeSeriesOf(r.Contender, reqs, r.start)
			series = append(series, ws)
			points = append(points, ts)
		}
		if len(series) == 0 {
			continue
		}
		name := fmt.Sprintf("%s-%s-waits", s.name, class)
		title := fmt.Sprintf("%s: %s wait distribution (share granted within x)", s.name, class)
		if err := draw(name, func(p string) error { return waitDistributionChart(p, title, series) }); err != nil {
			return err
		}
		if s.name == "reader-flood" || s.name == "writer-burst" {
			name := fmt.Sprintf("%s-%s-wait-over-time", s.name, class)
			title := fmt.Sprintf("%s: %s wait over time (first repetition)", s.name, class)
			if err := draw(name, func(p string) error { return waitOverTimeChart(p, title, points) }); err != nil {
				return err
			}
		}
	}
	var bars []bar
	for _, r := range results {
		bars = append(bars, bar{Label: r.Contender, Value: r.GrantsPerS})
	}
	return draw(s.name+"-throughput", func(p string) error {
		return barChart(p, s.name+": grants per second (higher is better)", "grants/s", bars, false)
	})
}

// handoffChart draws the handoff p50 of every contender and wake-up path.
func handoffChart(path string, results []result) error {
	var bars []bar
	for _, r := range results {
		for _, h := range r.Handoff {
			bars = append(bars, bar{Label: r.Contender + " (" + h.Woken + ")", Value: h.P50US})
		}
	}
	return barChart(path, "handoff latency p50: Unlock called to waiter granted (lower is better)", "µs", bars, true)
}

// renewalCharts draws the script calls a client sends per renewal round
// at each fan-out: what the batching saves (the commands those scripts run
// are in the table).
func renewalCharts(results []result, draw func(string, func(string) error) error) error {
	fanouts := map[int][]bar{}
	var order []int
	for _, r := range results {
		for _, o := range r.Renewal {
			if _, ok := fanouts[o.Leases]; !ok {
				order = append(order, o.Leases)
			}
			fanouts[o.Leases] = append(fanouts[o.Leases], bar{Label: r.Contender, Value: o.ScriptsPerRound})
		}
	}
	for _, n := range order {
		title := fmt.Sprintf("renewal: script calls sent per watchdog round, %d leases held (lower is better)", n)
		if err := draw(fmt.Sprintf("renewal-%d", n), func(p string) error { return barChart(p, title, "script calls/round", fanouts[n], true) }); err != nil {
			return err
		}
	}
	return nil
}
