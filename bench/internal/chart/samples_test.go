package chart

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChartSamples draws every chart of synthetic data resembling real
// runs, as SVG and PNG, and checks each SVG's texts; with
// FAIRBENCH_CHART_SAMPLES=dir the charts stay in dir, to look at.
func TestSamples(t *testing.T) {
	dir := os.Getenv("FAIRBENCH_CHART_SAMPLES")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	window := 5 * time.Second
	logUniform := func(lo, hi float64) time.Duration { return millisecs(lo * math.Pow(hi/lo, rng.Float64())) }

	// Writer requests of the reader flood, closed loop: ask, wait, hold
	// 5ms, think 20ms. Redisson's writer waits behind the readers, up to
	// the window; four writers (as in writer-burst) time out 12 times.
	type gen func(at time.Duration) (time.Duration, bool)
	runOf := func(label string, next gen, workers int) TimeSeries {
		s := TimeSeries{Label: label}
		for range workers {
			for at := time.Duration(rng.Int64N(int64(20 * time.Millisecond))); at < window; {
				w, timedOut := next(at)
				s.Points = append(s.Points, TimePoint{At: at, Wait: w, TimedOut: timedOut})
				at += w + 25*time.Millisecond
			}
		}
		return s
	}
	timeouts := 0
	redisson := runOf("redisson", func(at time.Duration) (time.Duration, bool) {
		switch r := rng.Float64(); {
		case timeouts < 12 && r < 0.12:
			timeouts++
			return window, true
		case r < 0.35:
			return logUniform(0.05, 2), false
		default:
			return logUniform(20, 4800), false
		}
	}, 4)
	fair := func(label string) TimeSeries {
		return runOf(label, func(time.Duration) (time.Duration, bool) {
			return millisecs(5 + 20*rng.Float64()*rng.Float64()), false
		}, 1)
	}
	over := []TimeSeries{redisson, fair("writer-preferring"), fair("phase-fair")}
	for i := range over {
		over[i].Slot = i // each contender its own colour, as fairbench does
	}
	var dist []WaitSeries
	for _, s := range over {
		ws := WaitSeries{Label: s.Label, Slot: s.Slot}
		for _, p := range s.Points {
			ws.Waits = append(ws.Waits, p.Wait)
			if p.TimedOut {
				ws.TimedOut++
			}
		}
		dist = append(dist, ws)
	}
	handoff := []Bar{
		{Label: "redisson", Value: 0.08}, {Label: "writer-preferring", Value: 0.09}, {Label: "phase-fair", Value: 0.1},
		{Label: "rueidislock", Value: 0.09}, {Label: "redislock", Value: 55}, {Label: "redsync", Value: 150},
	}
	grants := []Bar{
		{Label: "redisson", Value: 4210}, {Label: "writer-preferring", Value: 3980}, {Label: "phase-fair", Value: 4105},
		{Label: "rueidislock", Value: 2890}, {Label: "redislock", Value: 36}, {Label: "redsync", Value: 12},
	}
	for i := range handoff {
		handoff[i].Slot, grants[i].Slot = i, i
		grants[i].Note = "jain 0.99"
	}
	for _, ext := range []string{".svg", ".png"} {
		for name, draw := range map[string]func(string) error{
			"wait-distribution": func(p string) error {
				return WaitDistribution(p, "reader-flood: writer wait distribution per policy (5s window)", dist)
			},
			"wait-over-time": func(p string) error {
				return WaitOverTime(p, "reader-flood: writer wait over time", over)
			},
			"handoff-p50": func(p string) error {
				return Bars(p, "Handoff latency p50 (release to the waiter's grant)", "handoff p50 (ms)", handoff, true)
			},
			"contended-grants": func(p string) error {
				return Bars(p, "contended: grants per second (8 writers, 2 clients)", "grants/s", grants, false)
			},
		} {
			path := filepath.Join(dir, name+ext)
			if err := draw(path); err != nil {
				t.Fatal(err)
			}
			if ext == ".svg" {
				svgTexts(t, path)
			}
			t.Logf("wrote %s", path)
		}
	}
}
