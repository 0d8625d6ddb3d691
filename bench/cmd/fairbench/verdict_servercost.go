package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	bare "github.com/fairrw/rwlock/bench/internal/baseline"
)

// serverCostVerdict says what a lock+unlock costs the server, from the
// server-cost results: fairrw's locks (ours: the policies and the Mutex)
// and the cheapest peer, as ratios to the bare lua pair, for Redis CPU per
// uncontended cycle and uncontended cycles/s; then Redis CPU per contended
// grant, as a ratio to the same lock's uncontended cycle. A figure Redis
// did not report (miniredis: no INFO cpu) leaves its line out.
func serverCostVerdict(results []result, ours map[string]bool) []verdictLine {
	var lua *cycleCost
	var locks []result
	for _, r := range results {
		switch {
		case r.Baseline && r.Contender == bare.LuaPair.Name:
			lua = r.ServerCost.Write
		case !r.Baseline:
			locks = append(locks, r)
		}
	}
	if len(locks) == 0 {
		return nil
	}
	if lua == nil {
		return []verdictLine{{Topic: "server cost", Text: "the bare lua pair did not run to the end: nothing to compare against"}}
	}
	var lines []verdictLine
	if lua.RedisCPUUsec > 0 {
		text := fmt.Sprintf("Redis CPU per uncontended write cycle over the bare lua pair's %.1fµs: ", lua.RedisCPUUsec)
		lines = append(lines, verdictLine{Text: text + rankCost(locks, ours, false,
			func(r result) float64 { return r.ServerCost.Write.CPUVsLuaPair },
			func(r result) string {
				if rd := r.ServerCost.Read; rd != nil && rd.CPUVsLuaPair > 0 {
					return fmt.Sprintf(" (reads %.2f×)", rd.CPUVsLuaPair)
				}
				return ""
			})})
	}
	if lua.CyclesPerS > 0 {
		text := fmt.Sprintf("uncontended write cycles/s over the lua pair's %.0f: ", lua.CyclesPerS)
		lines = append(lines, verdictLine{Text: text + rankCost(locks, ours, true,
			func(r result) float64 { return r.ServerCost.Write.CyclesVsLuaPair },
			func(result) string { return "" })})
	}
	if lua.RedisCPUUsec > 0 {
		contended := slices.DeleteFunc(slices.Clone(locks), func(r result) bool { return r.ServerCost.Contended == nil })
		text := fmt.Sprintf("Redis CPU per contended grant (%d writers on one name) over the same lock's uncontended cycle: ",
			costContended.workers)
		lines = append(lines, verdictLine{Text: text + rankCost(contended, ours, false,
			func(r result) float64 { return r.ServerCost.Contended.CPUVsUncontended },
			func(r result) string { return fmt.Sprintf(" (%.1fµs)", r.ServerCost.Contended.RedisCPUUsec) })})
	}
	if line, ok := redissonOverJava(results); ok {
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		lines[0].Topic = "server cost"
	}
	return lines
}

// redissonOverJava says what fairrw's Redisson policy costs Redis per
// uncontended write cycle over Java Redisson's own scripts (the
// redisson-java pair) in the same run (issue 35's target: at most 1.1×),
// when both ran and Redis reported its CPU.
func redissonOverJava(results []result) (verdictLine, bool) {
	var java, ours *cycleCost
	for _, r := range results {
		if r.ServerCost == nil {
			continue
		}
		switch {
		case r.Baseline && r.Contender == bare.RedissonJavaPair.Name:
			java = r.ServerCost.Write
		case !r.Baseline && r.Contender == "redisson":
			ours = r.ServerCost.Write
		}
	}
	if java == nil || ours == nil {
		return verdictLine{}, false
	}
	q := quotient(ours.RedisCPUUsec, java.RedisCPUUsec)
	if q == 0 {
		return verdictLine{}, false
	}
	return verdictLine{Text: fmt.Sprintf("Redis CPU per uncontended write cycle of the Redisson policy over Java Redisson's own scripts (redisson-java): %.2f× (%.1fµs against %.1fµs)",
		q, ours.RedisCPUUsec, java.RedisCPUUsec)}, true
}

// rankCost lists fairrw's locks (ours) by the figure f, best first
// (highest with higher, else lowest), with note after each, then the best
// peer's. Locks whose figure is unknown (0) are left out.
func rankCost(locks []result, ours map[string]bool, higher bool, f func(result) float64, note func(result) string) string {
	var mine []result
	var peer *result
	better := func(a, b result) int {
		c := cmp.Compare(f(a), f(b))
		if higher {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.Contender, b.Contender))
	}
	for i, r := range locks {
		switch {
		case f(r) <= 0:
		case ours[r.Contender]:
			mine = append(mine, r)
		case peer == nil || better(r, *peer) < 0:
			peer = &locks[i]
		}
	}
	slices.SortFunc(mine, better)
	var parts []string
	for _, r := range mine {
		parts = append(parts, fmt.Sprintf("%s %.2f×%s", r.Contender, f(r), note(r)))
	}
	text := strings.Join(parts, ", ")
	if peer != nil {
		best := "cheapest"
		if higher {
			best = "fastest"
		}
		text += fmt.Sprintf("; %s peer %s %.2f×%s", best, peer.Contender, f(*peer), note(*peer))
	}
	return text
}
