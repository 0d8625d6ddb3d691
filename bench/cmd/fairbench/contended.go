package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fairrw/rwlock/bench/internal/contender"
)

// The contended scenarios (contended, contended-1client,
// contended-4clients: role fairnessCost) share their measurement and
// tables with every closed-loop scenario, and add what is compared
// across libraries: each contender's grants/s over the fastest peer
// library's (rueidislock, redislock, redsync: the contenders without
// reads), beside the writers' Jain index and waits. A barging peer's
// throughput is only as good as what it does to the waits; this puts
// both on one row.

// policiesOf maps every contender's name to whether it is one of
// fairrw's read-write policies (it has reads); the others are the peers.
func policiesOf(cts []contender.Contender) map[string]bool {
	policy := map[string]bool{}
	for _, c := range cts {
		policy[c.Name] = c.Reads
	}
	return policy
}

// bestPeer returns the index in results of the peer (not a policy) with
// the most grants/s, or -1 when no peer ran.
func bestPeer(results []result, policy map[string]bool) int {
	best := -1
	for i, r := range results {
		if !policy[r.Contender] && (best < 0 || r.GrantsPerS > results[best].GrantsPerS) {
			best = i
		}
	}
	return best
}

// setPeerRatios sets VsBestPeer on every result of the contended
// scenarios among scs (bySc[i] are scs[i]'s), and on the same results in
// all (the report's copies), when a peer ran the scenario.
func setPeerRatios(scs []scenario, bySc [][]result, cts []contender.Contender, all []result) {
	policy := policiesOf(cts)
	for i, s := range scs {
		p := bestPeer(bySc[i], policy)
		if s.role != fairnessCost || p < 0 || bySc[i][p].GrantsPerS <= 0 {
			continue
		}
		best := bySc[i][p].GrantsPerS
		for j := range bySc[i] {
			bySc[i][j].VsBestPeer = bySc[i][j].GrantsPerS / best
		}
		for j := range all {
			if all[j].Scenario == s.name {
				all[j].VsBestPeer = all[j].GrantsPerS / best
			}
		}
	}
}

// writeVsPeers prints a contended scenario's comparison table: per
// contender, grants/s and its ratio to the fastest peer's, then the
// writers' Jain index, waits and timeouts.
func writeVsPeers(w io.Writer, results []result) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "vs peers (ms)\tgrants/s\t× best peer\tW jain\tW p50\tW p99\tW max\tW t/o\t")
	for _, r := range results {
		row := []string{r.Contender, fmt.Sprintf("%.0f", r.GrantsPerS), "-"}
		if r.VsBestPeer > 0 {
			row[2] = fmt.Sprintf("%.2f", r.VsBestPeer)
		}
		if c := r.Classes["writer"]; c != nil {
			row = append(row, jainCell(c), f1(c.WaitP50MS), f1(c.WaitP99MS), f1(c.WaitMaxMS), fmt.Sprint(c.Timeouts))
		} else {
			row = append(row, dashes(5)...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// waitText formats a wait in ms for the verdict: whole ms from 100ms.
func waitText(ms float64) string {
	if ms >= 100 {
		return fmt.Sprintf("%.0fms", ms)
	}
	return f1(ms) + "ms"
}
