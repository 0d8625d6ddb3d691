package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// lagFactor and lagFloorMS decide when a policy that starves nobody
// still keeps the exposed class waiting: its p99 wait is over lagFactor
// times the best policy's, and over lagFactor x lagFloorMS (waits of a few
// ms are all fast, however their ratio).
const (
	lagFactor  = 10
	lagFloorMS = 10
)

// judgement sorts the policies of a starvation scenario: those that kept
// the exposed class within the bound at a p99 near the best (good), within
// the bound but far behind the best (slow), and those that starved it.
type judgement struct {
	class           string
	good, slow, bad []result
}

// judge sorts the policies' results of the starvation scenario s; good and
// slow by p99 wait of the exposed class, bad by the share it starved.
func judge(s scenario, results []result, policy map[string]bool) judgement {
	j := judgement{class: s.exposes.String()}
	var fine []result
	for _, r := range results {
		c := r.Classes[j.class]
		switch {
		case !policy[r.Contender] || c == nil:
		case starved(c):
			j.bad = append(j.bad, r)
		default:
			fine = append(fine, r)
		}
	}
	slices.SortFunc(fine, func(a, b result) int {
		return cmp.Or(cmp.Compare(a.Classes[j.class].WaitP99MS, b.Classes[j.class].WaitP99MS), cmp.Compare(a.Contender, b.Contender))
	})
	slices.SortStableFunc(j.bad, func(a, b result) int {
		return cmp.Compare(a.Classes[j.class].NotGrantedWithinBound, b.Classes[j.class].NotGrantedWithinBound)
	})
	for _, r := range fine {
		if p99 := r.Classes[j.class].WaitP99MS; p99 > lagFactor*max(fine[0].Classes[j.class].WaitP99MS, lagFloorMS) {
			j.slow = append(j.slow, r)
		} else {
			j.good = append(j.good, r)
		}
	}
	return j
}

// starvationVerdict names the policies that kept the exposed class within
// the bound near the best p99 wait, lowest first, then what the others
// did to it.
func starvationVerdict(s scenario, results []result, policy map[string]bool, bound time.Duration) (verdictLine, bool) {
	j := judge(s, results, policy)
	if len(j.good)+len(j.slow)+len(j.bad) == 0 {
		return verdictLine{}, false
	}
	p99 := func(r result) float64 { return r.Classes[j.class].WaitP99MS }
	var parts []string
	if len(j.good) > 0 {
		var names, p99s []string
		for _, r := range j.good {
			names = append(names, r.Contender)
			p99s = append(p99s, f1(p99(r))+"ms")
		}
		parts = append(parts, fmt.Sprintf("use %s (%s p99 %s)", strings.Join(names, " or "), j.class, strings.Join(p99s, ", ")))
	} else {
		parts = append(parts, fmt.Sprintf("every policy starved %ss; least: %s", j.class, j.bad[0].Contender))
	}
	for _, r := range j.slow {
		parts = append(parts, fmt.Sprintf("%s keeps %ss waiting: p99 %sms, %.0f× %s's",
			r.Contender, j.class, f1(p99(r)), p99(r)/p99(j.good[0]), j.good[0].Contender))
	}
	for _, r := range j.bad {
		c := r.Classes[j.class]
		parts = append(parts, fmt.Sprintf("%s starves %ss: %.1f%% not granted within %v, %d timed out, max %.0fms",
			r.Contender, j.class, 100*c.NotGrantedWithinBound, bound, c.Timeouts, c.WaitMaxMS))
	}
	return verdictLine{Topic: s.name, Text: strings.Join(parts, "; ")}, true
}
