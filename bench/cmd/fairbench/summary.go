package main

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// summarizeLoop computes the result of one closed-loop run.
func summarizeLoop(s scenario, contender string, rep int, o *outcome, bound time.Duration) result {
	res := result{
		Scenario: s.name, Contender: contender, Rep: rep,
		WindowS: o.window.Seconds(), ElapsedS: o.elapsed.Seconds(),
		Classes: map[string]*classResult{},
		Cost:    o.cost,
		samples: o.rec.Requests(fairness.Reader), start: o.start,
	}
	res.samples = append(res.samples, o.rec.Requests(fairness.Writer)...)
	for _, c := range s.classes {
		kinds := []fairness.Class{c.kind}
		if c.readShare > 0 { // mixed workers ask in both classes
			kinds = []fairness.Class{fairness.Reader, fairness.Writer}
		}
		for _, k := range kinds {
			reqs := o.rec.Requests(k)
			sum := fairness.Summarize(reqs)
			spread := fairness.SpreadOf(fairness.GrantsPerClient(reqs, c.workers))
			cr := &classResult{
				Workers: c.workers, Requests: sum.Count, Granted: sum.Count - sum.Timeouts, Timeouts: sum.Timeouts,
				WaitP50MS: msOf(sum.P50), WaitP90MS: msOf(sum.P90), WaitP99MS: msOf(sum.P99), WaitMaxMS: msOf(sum.Max),
				NotGrantedWithinBound: fairness.NotGrantedWithin(reqs, bound),
				GrantsMin:             spread.Min, GrantsMean: spread.Mean, GrantsMax: spread.Max,
				Jain: spread.Jain, Unfair: spread.Unfair,
				Overtakes:  fairness.Overtakes(reqs),
				GrantsPerS: fairness.GrantsPerSecond(reqs, o.start, o.window),
			}
			res.Classes[k.String()] = cr
			res.GrantsPerS += cr.GrantsPerS
		}
	}
	return res
}

// summarizeHandoff computes the result of one handoff run.
func summarizeHandoff(s scenario, contender string, rep int, o *handoffOutcome) result {
	return result{
		Scenario: s.name, Contender: contender, Rep: rep, ElapsedS: o.elapsed.Seconds(),
		Cost: o.cost, handoffs: o.samples, Handoff: handoffPaths(o.samples), Stalled: o.stalled, Unblocked: o.unblocked,
	}
}

// handoffPaths returns the latency percentiles of samples by wake-up
// path, the most frequent path first.
func handoffPaths(samples []handoffSample) []handoffPath {
	byPath := map[string][]time.Duration{}
	for _, h := range samples {
		byPath[h.Woken] = append(byPath[h.Woken], h.Latency)
	}
	var out []handoffPath
	for path, lat := range byPath {
		slices.Sort(lat)
		out = append(out, handoffPath{
			Woken: path, Samples: len(lat),
			P50US: usOf(fairness.Percentile(lat, 50)), P90US: usOf(fairness.Percentile(lat, 90)),
			P99US: usOf(fairness.Percentile(lat, 99)), MaxUS: usOf(lat[len(lat)-1]),
		})
	}
	slices.SortFunc(out, func(a, b handoffPath) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Woken, b.Woken))
	})
	return out
}

// medianOf returns the medians over the repetitions reps (at least one,
// all of one scenario and contender): every number of the result, class
// by class, and the spread of the headline figures. Handoff samples and
// chart samples are those of every repetition together.
func medianOf(reps []result) result {
	if len(reps) == 1 {
		m := reps[0]
		m.Rep = 0
		return m
	}
	first := reps[0]
	m := result{Scenario: first.Scenario, Contender: first.Contender, Baseline: first.Baseline, WindowS: first.WindowS,
		samples: first.samples, start: first.start, Spread: map[string][2]float64{}}
	var costs []*cost
	for _, r := range reps {
		costs = append(costs, r.Cost)
		m.handoffs = append(m.handoffs, r.handoffs...)
	}
	m.ElapsedS = medianBy(reps, func(r result) float64 { return r.ElapsedS })
	m.GrantsPerS = medianBy(reps, func(r result) float64 { return r.GrantsPerS })
	m.Cost = medianCost(costs)
	if m.GrantsPerS > 0 {
		m.Spread["grants_per_s"] = spreadBy(reps, func(r result) float64 { return r.GrantsPerS })
	}
	if first.Classes != nil {
		m.Classes = map[string]*classResult{}
		for name := range first.Classes {
			var all []*classResult
			for _, r := range reps {
				all = append(all, r.Classes[name])
			}
			m.Classes[name] = medianFields(all)
			m.Spread[name+"_wait_max_ms"] = spreadBy(reps, func(r result) float64 { return r.Classes[name].WaitMaxMS })
			m.Spread[name+"_wait_p99_ms"] = spreadBy(reps, func(r result) float64 { return r.Classes[name].WaitP99MS })
		}
	}
	if first.Handoff != nil {
		m.Handoff = handoffPaths(m.handoffs)
		for _, r := range reps {
			m.Stalled += r.Stalled
			m.Unblocked += r.Unblocked
		}
	}
	if first.ServerCost != nil {
		m.ServerCost = medianServerCost(reps)
	}
	if first.Arrival != nil {
		var all []*arrivalOutcome
		for _, r := range reps {
			all = append(all, r.Arrival)
		}
		m.Arrival = medianFields(all)
		// The worst of every repetition: the bound is a worst case.
		for _, a := range all {
			m.Arrival.HoldsMax = max(m.Arrival.HoldsMax, a.HoldsMax)
		}
	}
	if first.Queue != nil {
		m.Queue = medianQueue(reps)
		// The ratio of the medians shown, rather than the median of the
		// ratios, so that the table's last column follows from its others.
		m.RedisCPUGrowth = cpuGrowth(m.Queue)
		// The spread over the repetitions that had both readings.
		known := slices.DeleteFunc(slices.Clone(reps), func(r result) bool { return r.RedisCPUGrowth <= 0 })
		if m.RedisCPUGrowth > 0 && len(known) > 0 {
			m.Spread["redis_cpu_growth"] = spreadBy(known, func(r result) float64 { return r.RedisCPUGrowth })
		}
	}
	for i := range first.Renewal {
		var all []*renewalOutcome
		for _, r := range reps {
			all = append(all, r.Renewal[i])
		}
		m.Renewal = append(m.Renewal, medianFields(all))
	}
	return m
}

// medianCost is the field-by-field median of the costs that are known.
func medianCost(costs []*cost) *cost {
	var known []*cost
	for _, c := range costs {
		if c != nil {
			known = append(known, c)
		}
	}
	if len(known) == 0 {
		return nil
	}
	return medianFields(known)
}

// medianFields returns a T whose every numeric (and bool) field is the
// median of that field over all; a bool is true when most are. Strings
// and other fields are all[0]'s.
func medianFields[T any](all []*T) *T {
	out := new(T)
	*out = *all[0]
	v := reflect.ValueOf(out).Elem()
	vals := make([]float64, len(all))
	for i := range v.NumField() {
		f := v.Field(i)
		for j, x := range all {
			g := reflect.ValueOf(x).Elem().Field(i)
			switch g.Kind() {
			case reflect.Float64:
				vals[j] = g.Float()
			case reflect.Int:
				vals[j] = float64(g.Int())
			case reflect.Bool:
				vals[j] = 0
				if g.Bool() {
					vals[j] = 1
				}
			}
		}
		med := median(vals)
		switch f.Kind() {
		case reflect.Float64:
			f.SetFloat(med)
		case reflect.Int:
			f.SetInt(int64(math.Round(med)))
		case reflect.Bool:
			f.SetBool(med > 0.5)
		}
	}
	return out
}

// median is the middle value, or the mean of the two middle values.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func medianBy(reps []result, f func(result) float64) float64 {
	v := make([]float64, len(reps))
	for i, r := range reps {
		v[i] = f(r)
	}
	return median(v)
}

func spreadBy(reps []result, f func(result) float64) [2]float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range reps {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return [2]float64{lo, hi}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func usOf(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
