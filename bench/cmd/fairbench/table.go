package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeHeader prints the run's settings, machine and Redis.
func writeHeader(w io.Writer, rep *report) {
	m := rep.Machine
	fmt.Fprintf(w, "fairbench  %s\n", rep.Settings.Started)
	fmt.Fprintf(w, "command    %s\n", rep.Settings.Command)
	fmt.Fprintf(w, "machine    %s/%s, %d CPUs (GOMAXPROCS %d), %s", m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS, m.GoVersion)
	if m.CPU != "" {
		fmt.Fprintf(w, ", %s", m.CPU)
	}
	fmt.Fprintln(w)
	if rep.Redis.Kind == kindMiniredis {
		fmt.Fprintf(w, "redis      in-process miniredis at %s (no redis-server: not a real Redis's figures)\n", rep.Redis.Addr)
	} else {
		fmt.Fprintf(w, "redis      %s %s at %s\n", rep.Redis.Kind, rep.Redis.Version, rep.Redis.Addr)
	}
	fmt.Fprintf(w, "settings   window %v per run (also each request's timeout), %d repetition(s)%s, starvation bound %vms\n",
		time.Duration(rep.Settings.DurationS*float64(time.Second)), rep.Settings.Repetitions,
		map[bool]string{true: " (tables show medians)"}[rep.Settings.Repetitions > 1], rep.Settings.BoundMS)
	for _, c := range rep.Contenders {
		fmt.Fprintf(w, "contender  %-18s %s; wakes by %s", c.Name, c.Library, c.Wake)
		if c.Settings != "" {
			fmt.Fprintf(w, "; %s", c.Settings)
		}
		fmt.Fprintln(w)
	}
}

// writeScenario prints one scenario's results.
func writeScenario(w io.Writer, s scenario, results []result) error {
	fmt.Fprintf(w, "\n== %s: %s\n", s.name, s.about)
	if len(results) == 0 {
		fmt.Fprintln(w, "(no contender ran it)")
		return nil
	}
	switch s.kind {
	case handoff:
		return writeHandoff(w, results)
	case renewal:
		return writeRenewal(w, results)
	case queueCost:
		return writeQueueCost(w, s, results)
	}
	return writeLoop(w, results)
}

// writeLoop prints a closed-loop scenario: a table of waits and one of
// fairness, throughput and Redis cost, each with one row per contender.
func writeLoop(w io.Writer, results []result) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "waits (ms)\tW p50\tW p90\tW p99\tW max\tW t/o\tW >bound\tR p50\tR p90\tR p99\tR max\tR t/o\t")
	for _, r := range results {
		row := []string{r.Contender}
		if c := r.Classes["writer"]; c != nil {
			row = append(row, f1(c.WaitP50MS), f1(c.WaitP90MS), f1(c.WaitP99MS), f1(c.WaitMaxMS),
				fmt.Sprint(c.Timeouts), fmt.Sprintf("%.1f%%", 100*c.NotGrantedWithinBound))
		} else {
			row = append(row, dashes(6)...)
		}
		if c := r.Classes["reader"]; c != nil {
			row = append(row, f1(c.WaitP50MS), f1(c.WaitP90MS), f1(c.WaitP99MS), f1(c.WaitMaxMS), fmt.Sprint(c.Timeouts))
		} else {
			row = append(row, dashes(5)...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	base := baseline(results, func(r result) float64 { return r.GrantsPerS })
	tw = newTable(w)
	fmt.Fprintln(tw, "fairness, cost\tW jain\tW grants min/mean/max\tW overtakes\tR jain\tR grants min/mean/max\tgrants/s\t× redisson\tscripts/grant\tcmds/grant\tredis µs/grant\t")
	for _, r := range results {
		row := []string{r.Contender}
		if c := r.Classes["writer"]; c != nil {
			row = append(row, fmt.Sprintf("%.3f", c.Jain), spreadCell(c), fmt.Sprint(c.Overtakes))
		} else {
			row = append(row, dashes(3)...)
		}
		if c := r.Classes["reader"]; c != nil {
			row = append(row, fmt.Sprintf("%.3f", c.Jain), spreadCell(c))
		} else {
			row = append(row, dashes(2)...)
		}
		row = append(row, fmt.Sprintf("%.0f", r.GrantsPerS), ratio(r.GrantsPerS, base))
		row = append(row, costCells(r.Cost)...)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// writeHandoff prints handoff latency by contender and wake-up path.
func writeHandoff(w io.Writer, results []result) error {
	best := 0.0
	for _, r := range results {
		for _, h := range r.Handoff {
			if best == 0 || h.P50US < best {
				best = h.P50US
			}
		}
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "handoff (µs)\twoken by\thandoffs\tstalled\tp50\tp90\tp99\tmax\tp50 × best\tscripts/grant\tcmds/grant\tredis µs/grant\t")
	for _, r := range results {
		if len(r.Handoff) == 0 { // every handoff stalled
			fmt.Fprintf(tw, "%s\t-\t0\t%d\t%s\t\n", r.Contender, r.Stalled, strings.Join(dashes(8), "\t"))
		}
		for _, h := range r.Handoff {
			row := []string{r.Contender, h.Woken, fmt.Sprint(h.Samples), fmt.Sprint(r.Stalled),
				fmt.Sprintf("%.0f", h.P50US), fmt.Sprintf("%.0f", h.P90US), fmt.Sprintf("%.0f", h.P99US), fmt.Sprintf("%.0f", h.MaxUS),
				ratio(h.P50US, best)}
			row = append(row, costCells(r.Cost)...)
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	return tw.Flush()
}

// writeRenewal prints the watchdog's cost per round by contender and
// fan-out.
func writeRenewal(w io.Writer, results []result) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "renewal\tleases\tround every ms\tscripts/round\tcmds/round\tcmds/lease/round\tround ms\tlost\t")
	for _, r := range results {
		for _, o := range r.Renewal {
			round, lost := "n/a", "n/a"
			if o.RoundMS > 0 {
				round = f1(o.RoundMS)
			}
			if o.Lost >= 0 {
				lost = fmt.Sprint(o.Lost)
			}
			perLease := "n/a"
			if o.Leases > 0 && o.CommandsPerRound > 0 {
				perLease = fmt.Sprintf("%.3f", o.CommandsPerRound/float64(o.Leases))
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", r.Contender, o.Leases, o.IntervalMS,
				orNA(o.ScriptsPerRound), orNA(o.CommandsPerRound), perLease, round, lost)
		}
	}
	return tw.Flush()
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// baseline is f of the redisson result, the reference of the ratios; 0
// when Redisson did not run.
func baseline(results []result, f func(result) float64) float64 {
	for _, r := range results {
		if r.Contender == "redisson" {
			return f(r)
		}
	}
	return 0
}

// ratio formats v/base, or "-" without a base.
func ratio(v, base float64) string {
	if base <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/base)
}

// costCells are the cost columns: "n/a" without commandstats.
func costCells(c *cost) []string {
	if c == nil {
		return []string{"n/a", "n/a", "n/a"}
	}
	return []string{fmt.Sprintf("%.2f", c.ScriptsPerGrant), fmt.Sprintf("%.2f", c.CommandsPerGrant), fmt.Sprintf("%.1f", c.RedisCPUUsecPerGrant)}
}

func orNA(v float64) string {
	if v <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func spreadCell(c *classResult) string {
	s := fmt.Sprintf("%d/%.1f/%d", c.GrantsMin, c.GrantsMean, c.GrantsMax)
	if c.Unfair {
		s += " !"
	}
	return s
}

func dashes(n int) []string {
	d := make([]string, n)
	for i := range d {
		d[i] = "-"
	}
	return d
}

// writeLegend explains the columns once, under the tables.
func writeLegend(w io.Writer) {
	fmt.Fprint(w, `
W = writers, R = readers; waits in ms from asking to grant (nearest-rank
percentiles); t/o = requests timed out (counted at the window); >bound = share
of requests not granted within the starvation bound; jain = Jain's index of
grants over the class's workers; "!" = max grants > 2 x min grants; overtakes =
grants to writers asked later than a writer and granted before it (client-side
times); grants/s = grants within the window per second; × redisson = the
ratio to the Redisson policy in the same scenario. scripts/grant and
cmds/grant = Redis script calls and commands (those scripts ran included) per
grant, from INFO commandstats; redis µs/grant = redis-server CPU per grant.
handoff = the waiter's grant minus the holder's Unlock call, by what woke
the waiter; stalled = handoffs whose blocked waiter was not granted within 2s
of the release (lost wake-ups, left out of the percentiles); p50 × best = the
ratio to the lowest p50. renewal: Redis calls per
watchdog round while one process holds the leases (fairrw sends a round's
script calls, at most 100 leases each, in one pipelined round trip); round ms =
from the round's start to its last reply; n/a = not observable (one timer per
lock). queue cost: the contended loop once per queue length (writers on the
name); W p99 ms and W t/o as above; µs/grant 256÷8 = redis µs/grant with the
longest queue over that with the shortest, which a grant whose cost does not
depend on the writers queued behind it keeps near 1.
`)
}
