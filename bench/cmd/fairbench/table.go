package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeHeader prints the run's settings, machine and Redis; the
// contenders' settings (long) with wide only.
func writeHeader(w io.Writer, rep *report, wide bool) {
	const indent = "           "
	m := rep.Machine
	fmt.Fprintf(w, "fairbench  %s\n", rep.Settings.Started)
	writeWrapped(w, "command    ", indent, rep.Settings.Command)
	machine := fmt.Sprintf("%s/%s, %d CPUs (GOMAXPROCS %d), %s", m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS, m.GoVersion)
	if m.CPU != "" {
		machine += ", " + m.CPU
	}
	writeWrapped(w, "machine    ", indent, machine)
	if rep.Redis.Kind == kindMiniredis {
		writeWrapped(w, "redis      ", indent, fmt.Sprintf("in-process miniredis at %s (no redis-server: not a real Redis's figures)", rep.Redis.Addr))
	} else {
		writeWrapped(w, "redis      ", indent, fmt.Sprintf("%s %s at %s", rep.Redis.Kind, rep.Redis.Version, rep.Redis.Addr))
	}
	writeWrapped(w, "settings   ", indent, fmt.Sprintf("window %v per run (also each request's timeout), %d repetition(s)%s, starvation bound %vms",
		time.Duration(rep.Settings.DurationS*float64(time.Second)), rep.Settings.Repetitions,
		map[bool]string{true: " (tables show medians)"}[rep.Settings.Repetitions > 1], rep.Settings.BoundMS))
	for _, c := range rep.Contenders {
		line := fmt.Sprintf("%s; wakes by %s", c.Library, c.Wake)
		if wide && c.Settings != "" {
			line += "; " + c.Settings
		}
		writeWrapped(w, fmt.Sprintf("contender  %-18s ", c.Name), indent+strings.Repeat(" ", 19), line)
	}
}

// writeScenario prints one scenario's results, then its failed runs.
func writeScenario(w io.Writer, s scenario, results []result, failures []failure, wide bool) error {
	fmt.Fprintln(w)
	writeWrapped(w, "== ", "   ", s.name+": "+s.about)
	var err error
	switch {
	case len(results) == 0:
		fmt.Fprintln(w, "(no contender ran it to the end)")
	case s.kind == handoff:
		err = writeHandoff(w, results, wide)
	case s.kind == renewal:
		err = writeRenewal(w, results)
	case s.kind == queueCost:
		err = writeQueueCost(w, s, results)
	case s.kind == serverCost:
		err = writeServerCost(w, results)
	case s.kind == arrival:
		err = writeArrival(w, results)
	default:
		err = writeLoop(w, results, wide)
		if err == nil && s.role == fairnessCost {
			fmt.Fprintln(w)
			err = writeVsPeers(w, results)
		}
	}
	for _, f := range failures {
		if f.Scenario != s.name {
			continue
		}
		what := "failed"
		if f.Stalled {
			what = "stalled"
		}
		writeWrapped(w, fmt.Sprintf("%s: %s %s after %.1fs (repetition %d), left out: ", f.Contender, s.name, what, f.AfterS, f.Rep),
			"    ", f.Error)
	}
	return err
}

// writeLoop prints a closed-loop scenario: a table of waits and one of
// throughput, fairness and Redis cost, each with one row per contender.
// Without wide, each fits 120 columns: p90 and the grant spreads are left
// out, and the cost is the commands and the CPU per grant.
func writeLoop(w io.Writer, results []result, wide bool) error {
	tw := newTable(w)
	if wide {
		fmt.Fprintln(tw, "waits (ms)\tW p50\tW p90\tW p99\tW max\tW t/o\tW >bound\tR p50\tR p90\tR p99\tR max\tR t/o\tR >bound\t")
	} else {
		fmt.Fprintln(tw, "waits (ms)\tW p50\tW p99\tW max\tW t/o\tW >bound\tR p50\tR p99\tR max\tR t/o\tR >bound\t")
	}
	for _, r := range results {
		row := append([]string{r.Contender}, waitCells(r.Classes["writer"], wide)...)
		row = append(row, waitCells(r.Classes["reader"], wide)...)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if wide {
		return writeLoopWide(w, results)
	}
	base := baseline(results, func(r result) float64 { return r.GrantsPerS })
	tw = newTable(w)
	fmt.Fprintln(tw, "throughput, fairness\tgrants/s\t× redisson\tW jain\tW overtakes\tR jain\tcmds/grant\tredis µs/grant\t")
	for _, r := range results {
		row := []string{r.Contender, fmt.Sprintf("%.0f", r.GrantsPerS), ratio(r.GrantsPerS, base)}
		if c := r.Classes["writer"]; c != nil {
			row = append(row, jainCell(c), fmt.Sprint(c.Overtakes))
		} else {
			row = append(row, dashes(2)...)
		}
		if c := r.Classes["reader"]; c != nil {
			row = append(row, jainCell(c))
		} else {
			row = append(row, "-")
		}
		cells := costCells(r.Cost)
		row = append(row, cells[1], cells[2])
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// waitCells are one class's wait columns: dashes for a class the
// scenario does not have.
func waitCells(c *classResult, wide bool) []string {
	n := 5
	if wide {
		n = 6
	}
	if c == nil {
		return dashes(n)
	}
	cells := []string{f1(c.WaitP50MS)}
	if wide {
		cells = append(cells, f1(c.WaitP90MS))
	}
	return append(cells, f1(c.WaitP99MS), f1(c.WaitMaxMS), fmt.Sprint(c.Timeouts), fmt.Sprintf("%.1f%%", 100*c.NotGrantedWithinBound))
}

// jainCell is the class's Jain index, marked "!" when a worker got more
// than twice another's grants.
func jainCell(c *classResult) string {
	s := fmt.Sprintf("%.3f", c.Jain)
	if c.Unfair {
		s += " !"
	}
	return s
}

// writeLoopWide prints -wide's table of fairness, throughput and every
// cost column.
func writeLoopWide(w io.Writer, results []result) error {
	base := baseline(results, func(r result) float64 { return r.GrantsPerS })
	tw := newTable(w)
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

// writeHandoff prints handoff latency by contender and wake-up path;
// without wide, p90 and scripts/grant are left out (120 columns).
func writeHandoff(w io.Writer, results []result, wide bool) error {
	best := 0.0
	for _, r := range results {
		for _, h := range r.Handoff {
			if best == 0 || h.P50US < best {
				best = h.P50US
			}
		}
	}
	tw := newTable(w)
	if wide {
		fmt.Fprintln(tw, "handoff (µs)\twoken by\thandoffs\tstalled\tp50\tp90\tp99\tmax\tp50 × best\tscripts/grant\tcmds/grant\tredis µs/grant\t")
	} else {
		fmt.Fprintln(tw, "handoff (µs)\twoken by\thandoffs\tstalled\tp50\tp99\tmax\tp50 × best\tcmds/grant\tredis µs/grant\t")
	}
	for _, r := range results {
		cost := costCells(r.Cost)
		if !wide {
			cost = cost[1:]
		}
		if len(r.Handoff) == 0 { // every handoff stalled
			fmt.Fprintf(tw, "%s\t-\t0\t%d\t%s\t\n", r.Contender, r.Stalled, strings.Join(dashes(4+len(cost)+map[bool]int{true: 1}[wide]), "\t"))
		}
		for _, h := range r.Handoff {
			row := []string{r.Contender, h.Woken, fmt.Sprint(h.Samples), fmt.Sprint(r.Stalled), fmt.Sprintf("%.0f", h.P50US)}
			if wide {
				row = append(row, fmt.Sprintf("%.0f", h.P90US))
			}
			row = append(row, fmt.Sprintf("%.0f", h.P99US), fmt.Sprintf("%.0f", h.MaxUS), ratio(h.P50US, best))
			row = append(row, cost...)
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
func writeLegend(w io.Writer, wide bool) {
	fmt.Fprint(w, `
W = writers, R = readers; waits in ms from asking to grant (nearest-rank
percentiles); t/o = requests timed out (counted at the window); >bound = share
of requests not granted within the starvation bound; jain = Jain's index of
grants over the class's workers (1 = every worker got as many); "!" = max
grants > 2 x min grants; overtakes = grants to writers asked later than a
writer and granted before it (client-side times); grants/s = grants within
the window per second; × redisson = the ratio to the Redisson policy in the
same scenario; × best peer (contended scenarios) = the ratio to the fastest
peer library's (rueidislock, redislock, redsync) in the same scenario, beside
the writers' jain and waits (W max = the longest Acquire call, timed out or
not). cmds/grant = Redis commands (those scripts ran included) per
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
depend on the writers queued behind it keeps near 1. server cost: tight
lock+unlock loops, per cycle (in the contended loop, per grant); lua pair and
evalsha pair = the same loop over two bare scripts per cycle, HGET/HSET/PEXPIRE
then HEXISTS/DEL/PUBLISH, and SET then DEL; × lua pair, × evalsha pair = the
ratio to that pair's uncontended write cycle; redis µs = Redis's main-thread
CPU (INFO cpu); cmds = Redis commands (script calls and the commands scripts
ran); client µs = fairbench's own CPU (getrusage: the lock library, its Redis
client, the loop); × uncontended = redis µs/grant over the same lock's
uncontended write cycle; n/a = not measurable (miniredis has no INFO cpu).
`)
	if wide {
		fmt.Fprint(w, `-wide: p90 is the 90th percentile; W/R grants min/mean/max = grants per
worker of the class; scripts/grant = Redis script calls per grant.
`)
	} else {
		fmt.Fprint(w, "-wide adds p90, the grants per worker, scripts/grant and each contender's settings.\n")
	}
}
