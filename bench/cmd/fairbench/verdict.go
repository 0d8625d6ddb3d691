package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
)

// starvedShare is the share of a class's requests not granted within the
// starvation bound from which the verdict says a policy starves the
// class (a single timed-out request is enough too). 1% keeps the odd slow
// grant of a loaded machine from counting, and catches a class that waits
// out the window again and again.
const starvedShare = 0.01

// verdictLine is one line of the verdict: a workload and what this run's
// numbers say about it.
type verdictLine struct {
	Topic string
	Text  string
}

// verdictOf computes the verdict from the results of the scenarios scs
// (bySc[i] are scs[i]'s): for each starvation scenario, the policies that
// did not starve the class it exposes, best first, and those that did; the
// policies' throughput over the throughput scenarios; the cost of fairness
// against the fastest peer; what a cycle costs the server against the bare
// script pair (server-cost); and which policies starved no class at all, or
// kept one waiting far behind the best.
// Policies are the contenders with reads; peers the others. Nothing in it
// is written in advance: a line appears only for what ran.
func verdictOf(scs []scenario, bySc [][]result, cts []contender.Contender, bound time.Duration) []verdictLine {
	policy, ours := policiesOf(cts), map[string]bool{}
	for _, c := range cts {
		ours[c.Name] = c.Library == "fairrw"
	}
	var lines []verdictLine
	// policy -> where it starved a class, or kept it waiting: "writers in
	// reader-flood"
	starvers, slow := map[string][]string{}, map[string][]string{}
	var ran []string // policies that ran a starvation scenario, in order
	var tput []scenario
	var tputResults [][]result
	var costs, server []verdictLine
	for i, s := range scs {
		switch s.role {
		case starvation:
			l, ok := starvationVerdict(s, bySc[i], policy, bound)
			if !ok {
				continue
			}
			lines = append(lines, l)
			j := judge(s, bySc[i], policy)
			for _, r := range bySc[i] { // in the contenders' order
				if policy[r.Contender] && r.Classes[j.class] != nil && !slices.Contains(ran, r.Contender) {
					ran = append(ran, r.Contender)
				}
			}
			for _, r := range j.slow {
				slow[r.Contender] = append(slow[r.Contender], j.class+"s in "+s.name)
			}
			for _, r := range j.bad {
				starvers[r.Contender] = append(starvers[r.Contender], j.class+"s in "+s.name)
			}
		case throughput:
			tput, tputResults = append(tput, s), append(tputResults, bySc[i])
		case fairnessCost:
			if l, ok := costVerdict(s, bySc[i], policy); ok {
				costs = append(costs, l)
			}
		case serverCosts:
			server = append(server, serverCostVerdict(bySc[i], ours)...)
		case yieldBound:
			if l, ok := arrivalVerdict(s, bySc[i]); ok {
				costs = append(costs, l)
			}
		}
	}
	if l, ok := throughputVerdict(tput, tputResults, policy); ok {
		lines = append(lines, l)
	}
	lines = append(lines, costs...)
	lines = append(lines, server...)
	if len(ran) > 0 {
		lines = append(lines, overallVerdict(ran, starvers, slow))
	}
	return lines
}

// starved reports whether a class (nil: absent) was starved: a request
// timed out, or starvedShare or more were not granted within the bound.
func starved(c *classResult) bool {
	return c != nil && (c.Timeouts > 0 || c.NotGrantedWithinBound >= starvedShare)
}

// throughputVerdict ranks the policies by their grants/s over the
// throughput scenarios: each one's geometric mean of its ratio to the
// fastest policy of each scenario, over the scenarios it ran.
func throughputVerdict(scs []scenario, bySc [][]result, policy map[string]bool) (verdictLine, bool) {
	logSum, runs := map[string]float64{}, map[string]int{}
	var names []string
	for i := range scs {
		best := 0.0
		for _, r := range bySc[i] {
			if policy[r.Contender] {
				best = max(best, r.GrantsPerS)
			}
		}
		if best <= 0 {
			continue
		}
		names = append(names, scs[i].name)
		for _, r := range bySc[i] {
			if policy[r.Contender] && r.GrantsPerS > 0 {
				logSum[r.Contender] += math.Log(r.GrantsPerS / best)
				runs[r.Contender]++
			}
		}
	}
	if len(runs) == 0 {
		return verdictLine{}, false
	}
	type rank struct {
		name  string
		ratio float64
	}
	var ranks []rank
	for name, n := range runs {
		ranks = append(ranks, rank{name, math.Exp(logSum[name] / float64(n))})
	}
	slices.SortFunc(ranks, func(a, b rank) int { return cmp.Or(cmp.Compare(b.ratio, a.ratio), cmp.Compare(a.name, b.name)) })
	parts := []string{fmt.Sprintf("%s fastest", ranks[0].name)}
	for _, r := range ranks[1:] {
		parts = append(parts, fmt.Sprintf("%s %.2f×", r.name, r.ratio))
	}
	return verdictLine{Topic: "throughput", Text: fmt.Sprintf("%s: %s (grants/s over the fastest policy's, geometric mean)",
		strings.Join(names, ", "), strings.Join(parts, ", "))}, true
}

// costVerdict is the cost of fairness in a contended scenario every
// library runs: the fastest peer's grants/s, then each policy's as a
// ratio to it, each with the writers' Jain index and longest wait beside
// it (what barging buys the peer, and what it costs its waiters).
func costVerdict(s scenario, results []result, policy map[string]bool) (verdictLine, bool) {
	var policies []result
	for _, r := range results {
		if policy[r.Contender] {
			policies = append(policies, r)
		}
	}
	if len(policies) == 0 {
		return verdictLine{}, false
	}
	p := bestPeer(results, policy)
	if p < 0 || results[p].GrantsPerS <= 0 {
		return verdictLine{Topic: "fairness cost", Text: s.label + ": no peer library ran it to the end: nothing to compare against"}, true
	}
	peer := results[p]
	slices.SortFunc(policies, func(a, b result) int {
		return cmp.Or(cmp.Compare(b.GrantsPerS, a.GrantsPerS), cmp.Compare(a.Contender, b.Contender))
	})
	parts := []string{fmt.Sprintf("%s: fastest peer %s %.0f grants/s (%s)", s.label, peer.Contender, peer.GrantsPerS, writerFairness(peer))}
	for _, r := range policies {
		parts = append(parts, fmt.Sprintf("%s %.2f× (%s)", r.Contender, r.GrantsPerS/peer.GrantsPerS, writerFairness(r)))
	}
	return verdictLine{Topic: "fairness cost", Text: strings.Join(parts, "; ")}, true
}

// writerFairness is the writers' Jain index and longest wait: "jain 0.85,
// max wait 2100ms", or "no writers".
func writerFairness(r result) string {
	c := r.Classes["writer"]
	if c == nil {
		return "no writers"
	}
	return fmt.Sprintf("jain %.2f, max wait %s", c.Jain, waitText(c.WaitMaxMS))
}

// overallVerdict names the policies that starved no class in the
// starvation scenarios they ran (ran, in order), and what the others
// starved, then where a policy kept a class waiting far behind the best.
func overallVerdict(ran []string, starvers, slow map[string][]string) verdictLine {
	var fine, bad, late []string
	for _, name := range ran {
		if s := starvers[name]; len(s) > 0 {
			bad = append(bad, fmt.Sprintf("%s (%s)", name, strings.Join(s, ", ")))
		} else {
			fine = append(fine, name)
		}
		if s := slow[name]; len(s) > 0 {
			late = append(late, fmt.Sprintf("%s (%s)", name, strings.Join(s, ", ")))
		}
	}
	var text string
	if len(fine) == 0 {
		text = "every policy starved a class: " + strings.Join(bad, "; ")
	} else {
		text = strings.Join(fine, ", ") + " starved no class"
		if len(bad) > 0 {
			text += "; starved: " + strings.Join(bad, "; ")
		}
	}
	if len(late) > 0 {
		text += fmt.Sprintf("; p99 over %d× the best: %s", lagFactor, strings.Join(late, "; "))
	}
	return verdictLine{Topic: "overall", Text: text}
}

// verdictTopicWidth is the width of the verdict's first column.
const verdictTopicWidth = 15

// verdictText renders the verdict's lines, wrapped to maxColumns.
func verdictText(lines []verdictLine) []string {
	var out []string
	indent := strings.Repeat(" ", verdictTopicWidth)
	for _, l := range lines {
		first := fmt.Sprintf("%-*s", verdictTopicWidth, l.Topic)
		if len(l.Topic) >= verdictTopicWidth {
			// A long topic (a scenario's name) on its own line.
			out = append(out, l.Topic)
			first = indent
		}
		out = append(out, wrapText(first, indent, l.Text, maxColumns)...)
	}
	return out
}

// writeVerdict prints the verdict under its heading.
func writeVerdict(w io.Writer, lines []verdictLine) {
	fmt.Fprintln(w)
	writeWrapped(w, "== ", "   ", fmt.Sprintf("verdict, computed from this run's numbers (starves = a request timed out, or %.0f%% or more "+
		"were not granted within the starvation bound)", 100*starvedShare))
	if len(lines) == 0 {
		fmt.Fprintln(w, "nothing to judge: run reader-flood, writer-stream, mixed-* or contended with the policies")
		return
	}
	for _, l := range verdictText(lines) {
		fmt.Fprintln(w, l)
	}
}

// skippedVerdict names the contenders whose runs failed or stalled and
// were left out: where, after how long, and, for a stall, that the
// contender sat out the scenarios after. None: no line.
func skippedVerdict(failures []failure, cts []contender.Contender) (verdictLine, bool) {
	if len(failures) == 0 {
		return verdictLine{}, false
	}
	var parts []string
	for _, f := range failures {
		what := "failed"
		if f.Stalled {
			what = "stalled"
		}
		who := f.Contender
		if !isPeer(f.Contender, cts) {
			who += " (fairrw's own)"
		}
		part := fmt.Sprintf("%s %s in %s after %.1fs", who, what, f.Scenario, f.AfterS)
		if f.Stalled {
			part += ", and sat out the scenarios after"
		}
		parts = append(parts, part)
	}
	return verdictLine{Topic: "skipped", Text: strings.Join(parts, "; ") + " (reported under each scenario; the comparisons above leave them out)"}, true
}
