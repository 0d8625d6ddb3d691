package chart

import (
	"slices"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// WaitSeries is one contender's waits of one class.
type WaitSeries struct {
	Label    string          // e.g. "redisson", "writer-preferring"
	Waits    []time.Duration // timed-out requests included at their timeout
	TimedOut int             // how many of Waits are timeouts (the legend says so)
	// Slot picks the series' colour and dash in the fixed palette: the
	// same slot draws the same way in every chart.
	Slot int
}

// TimePoint is one request: when it was asked (since the run's start) and
// how long it waited.
type TimePoint struct {
	At       time.Duration
	Wait     time.Duration
	TimedOut bool
}

// TimeSeries is one contender's requests over a run.
type TimeSeries struct {
	Label  string
	Points []TimePoint
	// Slot picks the series' colour and glyph in the fixed palette.
	Slot int
}

// Bar is one contender's value of a metric, e.g. grants/s in the contended
// scenario.
type Bar struct {
	Label string
	Value float64
	// Note, if set, is written after the value, e.g. "jain 0.99" beside a
	// throughput, so that a fast but unfair contender reads as such.
	Note string
	// Slot picks the bar's colour in the fixed palette.
	Slot int
}

// WaitsOf returns the waits of reqs (one class of one run) under label,
// drawn in slot.
func WaitsOf(label string, slot int, reqs []fairness.Request) WaitSeries {
	s := WaitSeries{Label: label, Slot: slot, Waits: make([]time.Duration, len(reqs))}
	for i, q := range reqs {
		s.Waits[i] = q.Wait
		if q.TimedOut {
			s.TimedOut++
		}
	}
	return s
}

// TimesOf returns reqs (one class of one run started at start) as
// points in time under label.
func TimesOf(label string, slot int, reqs []fairness.Request, start time.Time) TimeSeries {
	s := TimeSeries{Label: label, Slot: slot, Points: make([]TimePoint, len(reqs))}
	for i, q := range reqs {
		s.Points[i] = TimePoint{At: q.Asked.Sub(start), Wait: q.Wait, TimedOut: q.TimedOut}
	}
	return s
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ecdf returns the empirical cumulative distribution of waits: xs are the
// distinct waits in milliseconds, ascending, and ys[i] is the share of
// waits <= xs[i] (the last is 1). Both are empty for no waits.
func ecdf(waits []time.Duration) (xs, ys []float64) {
	if len(waits) == 0 {
		return nil, nil
	}
	sorted := slices.Clone(waits)
	slices.Sort(sorted)
	n := float64(len(sorted))
	for i, w := range sorted {
		if i+1 < len(sorted) && sorted[i+1] == w {
			continue // the last of equal waits carries their share
		}
		xs = append(xs, millis(w))
		ys = append(ys, float64(i+1)/n)
	}
	return xs, ys
}
