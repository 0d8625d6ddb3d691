package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fairrw/rwlock/bench/internal/chart"
	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// indexFile is the page of the -out folder to open first: the verdict and
// every chart.
const indexFile = "index.html"

// figures draws a run's charts into dir and keeps the index's entries.
type figures struct {
	dir string
	// slots gives every contender its own colour in every chart.
	slots map[string]int
	group string // the scenario being drawn
	files []string
	index []chart.Entry
}

// slotsOf gives each of all its palette slot: its position, so that a
// contender keeps its colour from chart to chart and from run to run.
func slotsOf(all []contender.Contender) map[string]int {
	slots := map[string]int{}
	for i, c := range all {
		slots[c.Name] = i
	}
	return slots
}

// draw writes the chart name as SVG (sharp at any size, listed in the
// index) and PNG (fonts rendered: it looks the same everywhere).
func (f *figures) draw(name, title string, draw func(path, title string) error) error {
	for _, ext := range []string{".svg", ".png"} {
		path := filepath.Join(f.dir, name+ext)
		if err := draw(path, title); err != nil {
			return fmt.Errorf("%s: %w", name+ext, err)
		}
		f.files = append(f.files, path)
	}
	f.index = append(f.index, chart.Entry{Group: f.group, Title: title, File: name + ".svg"})
	return nil
}

// writeFigures draws the charts of the results into dir (created if need
// be), then the index page with the verdict's lines on top, and returns
// the files written, the index last. Every closed-loop scenario gets the
// wait distribution of each class, its wait tail and its throughput with
// Jain's index beside it; the starvation scenarios also get waits over
// time; handoff, renewal, queue-cost and server-cost get bars.
func writeFigures(dir string, picked []scenario, bySc [][]result, slots map[string]int, verdict []string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f := &figures{dir: dir, slots: slots}
	for i, s := range picked {
		results := bySc[i]
		if len(results) == 0 {
			continue
		}
		f.group = s.name + ": " + s.about
		var err error
		switch s.kind {
		case handoff:
			err = f.handoff(results)
		case renewal:
			err = f.renewal(results)
		case queueCost:
			err = f.queueCost(s, results)
		case serverCost:
			err = f.serverCost(results)
		case arrival:
			err = f.arrival(s, results)
		default:
			err = f.loop(s, results)
		}
		if err != nil {
			return f.files, err
		}
	}
	index := filepath.Join(dir, indexFile)
	if err := chart.Index(index, "fairbench: every chart of the run", verdict, f.index); err != nil {
		return f.files, err
	}
	return append(f.files, index), nil
}

// arrival draws an arrival scenario's chart: the most holds of the stream
// the other Client's writer waited for, with its p99 wait beside it.
func (f *figures) arrival(s scenario, results []result) error {
	var bars []chart.Bar
	for _, r := range results {
		if a := r.Arrival; a != nil {
			bars = append(bars, chart.Bar{Label: r.Contender, Value: float64(a.HoldsMax),
				Note: fmt.Sprintf("p99 wait %sms", f1(a.WaitP99MS)), Slot: f.slots[r.Contender]})
		}
	}
	return f.draw(s.name+"-holds", s.name+": the most holds of the stream another Client's writer waited for (lower is better), its p99 wait beside it",
		func(p, title string) error { return chart.Bars(p, title, "holds", bars, false) })
}

// loop draws a closed-loop scenario's charts.
func (f *figures) loop(s scenario, results []result) error {
	for _, class := range []fairness.Class{fairness.Writer, fairness.Reader} {
		if err := f.classWaits(s, class, results); err != nil {
			return err
		}
	}
	var bars []chart.Bar
	for _, r := range results {
		var notes []string
		for _, c := range [][2]string{{"writer", "W"}, {"reader", "R"}} {
			if cr := r.Classes[c[0]]; cr != nil {
				notes = append(notes, fmt.Sprintf("%s jain %.2f", c[1], cr.Jain))
			}
		}
		bars = append(bars, chart.Bar{Label: r.Contender, Value: r.GrantsPerS, Note: strings.Join(notes, ", "), Slot: f.slots[r.Contender]})
	}
	return f.draw(s.name+"-throughput", s.name+": grants per second (higher is better), Jain's index of grants per worker beside it (1 = even)",
		func(p, title string) error { return chart.Bars(p, title, "grants/s", bars, false) })
}

// classWaits draws one class's wait distribution, its tail (p50, p99 and
// max on a log scale: a CDF hides its last percent), and for a starvation
// scenario its waits over time.
func (f *figures) classWaits(s scenario, class fairness.Class, results []result) error {
	var series []chart.WaitSeries
	var points []chart.TimeSeries
	var tail []chart.Bar
	for _, r := range results {
		c := r.Classes[class.String()]
		if c == nil {
			continue
		}
		var reqs []fairness.Request
		for _, q := range r.samples {
			if q.Class == class {
				reqs = append(reqs, q)
			}
		}
		slot := f.slots[r.Contender]
		series = append(series, chart.WaitsOf(r.Contender, slot, reqs))
		points = append(points, chart.TimesOf(r.Contender, slot, reqs, r.start))
		for _, p := range []struct {
			name string
			ms   float64
		}{{"p50", c.WaitP50MS}, {"p99", c.WaitP99MS}, {"max", c.WaitMaxMS}} {
			tail = append(tail, chart.Bar{Label: r.Contender + " " + p.name, Value: p.ms, Slot: slot})
		}
	}
	if len(series) == 0 {
		return nil
	}
	name := fmt.Sprintf("%s-%s", s.name, class)
	if err := f.draw(name+"-waits", fmt.Sprintf("%s: %s wait distribution (share granted within x)", s.name, class),
		func(p, title string) error { return chart.WaitDistribution(p, title, series) }); err != nil {
		return err
	}
	if err := f.draw(name+"-tail", fmt.Sprintf("%s: %s wait p50, p99 and max (lower is better; a timeout counts at the window)", s.name, class),
		func(p, title string) error { return chart.Bars(p, title, "wait (ms)", tail, true) }); err != nil {
		return err
	}
	if s.role != starvation {
		return nil
	}
	return f.draw(name+"-wait-over-time", fmt.Sprintf("%s: %s wait over time (first repetition)", s.name, class),
		func(p, title string) error { return chart.WaitOverTime(p, title, points) })
}

// handoff draws the handoff p50 of every contender and wake-up path, with
// its p99 beside it.
func (f *figures) handoff(results []result) error {
	var bars []chart.Bar
	for _, r := range results {
		for _, h := range r.Handoff {
			bars = append(bars, chart.Bar{Label: r.Contender + " (" + h.Woken + ")", Value: h.P50US,
				Note: "p99 " + fmt.Sprintf("%.0f", h.P99US), Slot: f.slots[r.Contender]})
		}
	}
	return f.draw("handoff", "handoff latency p50 (p99 beside it): Unlock called to waiter granted (lower is better)",
		func(p, title string) error { return chart.Bars(p, title, "µs", bars, true) })
}

// renewal draws the script calls a client sends per renewal round at
// each fan-out: what the batching saves (the commands those scripts run
// are in the table).
func (f *figures) renewal(results []result) error {
	fanouts := map[int][]chart.Bar{}
	var order []int
	for _, r := range results {
		for _, o := range r.Renewal {
			if _, ok := fanouts[o.Leases]; !ok {
				order = append(order, o.Leases)
			}
			fanouts[o.Leases] = append(fanouts[o.Leases], chart.Bar{Label: r.Contender, Value: o.ScriptsPerRound, Slot: f.slots[r.Contender]})
		}
	}
	for _, n := range order {
		title := fmt.Sprintf("renewal: script calls sent per watchdog round, %d leases held (lower is better)", n)
		if err := f.draw(fmt.Sprintf("renewal-%d", n), title,
			func(p, title string) error { return chart.Bars(p, title, "script calls/round", fanouts[n], true) }); err != nil {
			return err
		}
	}
	return nil
}
