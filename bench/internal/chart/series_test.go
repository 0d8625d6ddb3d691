package chart

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

func TestECDF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waits  []time.Duration
		xs, ys []float64
	}{
		{"none", nil, nil, nil},
		{"one", []time.Duration{millisecs(7)}, []float64{7}, []float64{1}},
		// Sorted: 0 0.5 2 2 3 -> at 0: 1/5, at 0.5: 2/5, at 2: 4/5, at 3: 5/5.
		{"ties and zero", []time.Duration{millisecs(3), millisecs(2), 0, millisecs(2), 500 * time.Microsecond},
			[]float64{0, 0.5, 2, 3}, []float64{0.2, 0.4, 0.8, 1}},
		// Sorted: 1 1 1 4000 5000 5000 (two timeouts at the window).
		{"timeouts at the window", []time.Duration{millisecs(5000), millisecs(1), millisecs(4000), millisecs(1), millisecs(5000), millisecs(1)},
			[]float64{1, 4000, 5000}, []float64{0.5, 4.0 / 6, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.waits)
			xs, ys := ecdf(tc.waits)
			if !slices.Equal(tc.waits, in) {
				t.Errorf("ecdf changed its input: %v, was %v", tc.waits, in)
			}
			if len(xs) != len(tc.xs) || len(ys) != len(tc.ys) {
				t.Fatalf("ecdf = %v, %v; want %v, %v", xs, ys, tc.xs, tc.ys)
			}
			for i := range xs {
				if math.Abs(xs[i]-tc.xs[i]) > 1e-9 || math.Abs(ys[i]-tc.ys[i]) > 1e-12 {
					t.Fatalf("ecdf = %v, %v; want %v, %v", xs, ys, tc.xs, tc.ys)
				}
			}
		})
	}
}

func TestSeriesOfRequests(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	reqs := []fairness.Request{
		{Class: fairness.Writer, Asked: start.Add(100 * time.Millisecond), Wait: millisecs(12)},
		{Class: fairness.Writer, Asked: start.Add(2 * time.Second), Wait: 5 * time.Second, TimedOut: true},
	}
	ws := WaitsOf("redisson", 3, reqs)
	if ws.Label != "redisson" || ws.Slot != 3 || ws.TimedOut != 1 || !slices.Equal(ws.Waits, []time.Duration{millisecs(12), 5 * time.Second}) {
		t.Errorf("WaitsOf = %+v", ws)
	}
	ts := TimesOf("redisson", 3, reqs, start)
	want := []TimePoint{{At: 100 * time.Millisecond, Wait: millisecs(12)}, {At: 2 * time.Second, Wait: 5 * time.Second, TimedOut: true}}
	if ts.Label != "redisson" || ts.Slot != 3 || !slices.Equal(ts.Points, want) {
		t.Errorf("TimesOf = %+v", ts)
	}
}
