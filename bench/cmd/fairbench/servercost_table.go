package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fairrw/rwlock/bench/internal/chart"
)

// writeServerCost prints the server-cost tables: the uncontended loops,
// one row per contender and lock mode (the baseline pairs first), and the
// contended loop, one row per contender. Each fits in 120 columns.
func writeServerCost(w io.Writer, results []result) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "server cost/cycle\tlock\tcycles/s\t× lua pair\t× evalsha pair\tredis µs\t× lua pair\tcmds\tscripts\tclient µs\t")
	for _, r := range results {
		sc := r.ServerCost
		for _, l := range []struct {
			mode string
			cc   *cycleCost
		}{{"write", sc.Write}, {"read", sc.Read}} {
			if l.cc == nil {
				continue
			}
			c := l.cc
			row := []string{r.Contender, l.mode, fmt.Sprintf("%.0f", c.CyclesPerS), ratioCell(c.CyclesVsLuaPair),
				ratioCell(c.CyclesVsEvalshaPair), usCell(c.RedisCPUUsec), ratioCell(c.CPUVsLuaPair),
				perCycleCell(c.CommandsPerCycle), perCycleCell(c.ScriptsPerCycle), usCell(c.ClientCPUUsec)}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintf(tw, "contended, %d writers\tgrants/s\tredis µs/grant\t× uncontended\tcmds/grant\tscripts/grant\tt/o\t\n", costContended.workers)
	for _, r := range results {
		c := r.ServerCost.Contended
		if c == nil {
			continue
		}
		row := []string{r.Contender, fmt.Sprintf("%.0f", c.CyclesPerS), usCell(c.RedisCPUUsec), ratioCell(c.CPUVsUncontended),
			perCycleCell(c.CommandsPerCycle), perCycleCell(c.ScriptsPerCycle), fmt.Sprint(c.Timeouts)}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// ratioCell formats a ratio, "n/a" when unknown (0).
func ratioCell(v float64) string {
	if v <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// usCell formats a time per cycle in µs, "n/a" when unknown (0).
func usCell(v float64) string {
	if v <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

// perCycleCell formats a count per cycle, "n/a" when unknown (0).
func perCycleCell(v float64) string {
	if v <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// serverCost draws the server-cost bars: Redis CPU per uncontended cycle
// (baselines, then every contender's writes and reads) with its ratio to
// the lua pair beside it, and per contended grant with its ratio to the
// contender's uncontended write cycle.
func (f *figures) serverCost(results []result) error {
	var cycles, grants []chart.Bar
	for _, r := range results {
		sc := r.ServerCost
		slot := f.slots[r.Contender]
		if r.Baseline {
			slot = chart.Colors - 1 // grey: not a lock
		}
		for _, l := range []struct {
			mode string
			cc   *cycleCost
		}{{"write", sc.Write}, {"read", sc.Read}} {
			if l.cc != nil {
				cycles = append(cycles, chart.Bar{Label: r.Contender + " " + l.mode, Value: usOrNaN(l.cc.RedisCPUUsec),
					Note: "× lua pair " + ratioCell(l.cc.CPUVsLuaPair), Slot: slot})
			}
		}
		if c := sc.Contended; c != nil {
			grants = append(grants, chart.Bar{Label: r.Contender, Value: usOrNaN(c.RedisCPUUsec),
				Note: "× uncontended " + ratioCell(c.CPUVsUncontended), Slot: slot})
		}
	}
	if err := f.draw("server-cost-cycle", "server-cost: Redis CPU per uncontended lock+unlock (lower is better), × the bare lua pair's beside it",
		func(p, title string) error { return chart.Bars(p, title, "µs/cycle", cycles, true) }); err != nil {
		return err
	}
	return f.draw("server-cost-grant", fmt.Sprintf("server-cost: Redis CPU per contended grant, %d writers on one name (lower is better), "+
		"× the same lock's uncontended cycle beside it", costContended.workers),
		func(p, title string) error { return chart.Bars(p, title, "µs/grant", grants, true) })
}

// usOrNaN is v, or NaN (drawn as n/a) when unknown (0).
func usOrNaN(v float64) float64 {
	if v <= 0 {
		return math.NaN()
	}
	return v
}
