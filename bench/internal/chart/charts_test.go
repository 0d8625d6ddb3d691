package chart

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWaitDistribution(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cdf.svg")
	series := []WaitSeries{
		{Label: "redisson", Waits: []time.Duration{millisecs(0.2), millisecs(40), millisecs(900), millisecs(5000), millisecs(5000)}, TimedOut: 2},
		{Label: "writer-preferring", Waits: []time.Duration{millisecs(5), millisecs(9), millisecs(25)}},
		{Label: "phase-fair", Waits: []time.Duration{millisecs(6), millisecs(20)}},
	}
	if err := WaitDistribution(path, "Writer waits under the reader flood", series); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, path, "Writer waits under the reader flood",
		"redisson (5, 2 timed out)", "writer-preferring (3)", "phase-fair (2)",
		"share of requests granted within x", "wait from asking to grant (ms, log scale)", "timed-out requests count at their timeout",
		"0.1", "1", "10000")
}

func TestWaitOverTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scatter.svg")
	series := []TimeSeries{
		{Label: "redisson", Points: []TimePoint{
			{At: 0, Wait: millisecs(0.3)}, {At: time.Second, Wait: millisecs(800)}, {At: 2 * time.Second, Wait: 5 * time.Second, TimedOut: true},
		}},
		{Label: "phase-fair", Points: []TimePoint{{At: 500 * time.Millisecond, Wait: millisecs(12)}, {At: 3 * time.Second, Wait: millisecs(20)}}},
	}
	if err := WaitOverTime(path, "Writer wait over time", series); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, path, "Writer wait over time", "redisson (2 granted)", "redisson: 1 timed out", "phase-fair (2 granted)",
		"time since the run's start, when asked (s)", "wait (ms, log scale)")
}

func TestBars(t *testing.T) {
	bars := []Bar{
		{Label: "redisson", Value: 0.08}, {Label: "writer-preferring", Value: 0.09}, {Label: "phase-fair", Value: 0.1},
		{Label: "rueidislock", Value: 0.09}, {Label: "redislock", Value: 55}, {Label: "redsync", Value: 150},
	}
	for _, logScale := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "bars.svg")
		if err := Bars(path, "Handoff p50", "ms", bars, logScale); err != nil {
			t.Fatal(err)
		}
		want := []string{"Handoff p50", "0.08", "0.09", "0.1", "55", "150"}
		for _, b := range bars {
			want = append(want, b.Label)
		}
		if logScale {
			want = append(want, "ms (log scale)", "0.01", "1000")
		} else {
			want = append(want, "ms")
		}
		checkSVG(t, path, want...)
	}
}

// TestChartEdgeCases draws empty, degenerate and odd inputs: each must
// give a valid SVG, without a panic.
func TestEdgeCases(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	cases := []struct {
		name string
		draw func(path string) error
		want []string
	}{
		{"cdf nil", func(p string) error { return WaitDistribution(p, "T", nil) }, []string{"T", "no data"}},
		{"cdf all empty", func(p string) error {
			return WaitDistribution(p, "T", []WaitSeries{{Label: "a"}, {Label: "b", Waits: []time.Duration{}}})
		}, []string{"T", "no data"}},
		{"cdf one empty", func(p string) error {
			return WaitDistribution(p, "T", []WaitSeries{{Label: "a"}, {Label: "b", Waits: []time.Duration{millisecs(3)}}})
		}, []string{"T", "b (1)"}},
		{"cdf zero waits", func(p string) error {
			return WaitDistribution(p, "T", []WaitSeries{{Label: "a", Waits: []time.Duration{0, 0, millisecs(2)}}})
		}, []string{"a (3)", "wait from asking to grant (ms, log scale)", "timed-out requests count at their timeout", "waits under 0.01 ms drawn at 0.01 ms"}},
		{"cdf only zeros", func(p string) error {
			return WaitDistribution(p, "T", []WaitSeries{{Label: "a", Waits: []time.Duration{0}}})
		}, []string{"a (1)"}},
		{"cdf one wait", func(p string) error {
			return WaitDistribution(p, "T", []WaitSeries{{Label: "a", Waits: []time.Duration{millisecs(10)}}})
		}, []string{"a (1)", "10", "100"}},
		{"cdf all timed out", func(p string) error {
			return WaitDistribution(p, "T", []WaitSeries{{Label: "a & <b>", Waits: []time.Duration{millisecs(5000), millisecs(5000)}, TimedOut: 2}})
		}, []string{"a & <b> (2, 2 timed out)"}},
		{"scatter nil", func(p string) error { return WaitOverTime(p, "T", nil) }, []string{"T", "no data"}},
		{"scatter all empty", func(p string) error {
			return WaitOverTime(p, "T", []TimeSeries{{Label: "a"}})
		}, []string{"T", "no data"}},
		{"scatter one point at 0", func(p string) error {
			return WaitOverTime(p, "T", []TimeSeries{{Label: "a", Points: []TimePoint{{}}}})
		}, []string{"a (1 granted)", "wait (ms, log scale)", "waits under 0.01 ms drawn at 0.01 ms"}},
		{"scatter only timeouts", func(p string) error {
			return WaitOverTime(p, "T", []TimeSeries{{Label: "a", Points: []TimePoint{{At: -time.Second, Wait: time.Second, TimedOut: true}}}})
		}, []string{"a: 1 timed out"}},
		{"scatter many", func(p string) error {
			pts := make([]TimePoint, 3000)
			for i := range pts {
				pts[i] = TimePoint{At: time.Duration(i) * time.Millisecond, Wait: time.Duration(i) * time.Microsecond}
			}
			return WaitOverTime(p, "T", []TimeSeries{{Label: "a", Points: pts}})
		}, []string{"a (3000 granted)"}},
		{"bars nil", func(p string) error { return Bars(p, "T", "ms", nil, true) }, []string{"T", "no data"}},
		{"bars one", func(p string) error { return Bars(p, "T", "ms", []Bar{{Label: "a", Value: 3}}, true) }, []string{"a", "3"}},
		{"bars one of 1", func(p string) error { return Bars(p, "T", "ms", []Bar{{Label: "a", Value: 1}}, true) }, []string{"a", "1"}},
		{"bars zero on log", func(p string) error {
			return Bars(p, "T", "ms", []Bar{{Label: "a", Value: 0}, {Label: "b", Value: 20}, {Label: "c", Value: -1}}, true)
		}, []string{"a", "b", "c", "0", "20", "-1", "ms (log scale)", "values <= 0 drawn at 10"}},
		{"bars all zero on log", func(p string) error {
			return Bars(p, "T", "ms", []Bar{{Label: "a", Value: 0}, {Label: "b", Value: 0}}, true)
		}, []string{"a", "b", "ms", "not log scale: no value is positive"}},
		{"bars all zero linear", func(p string) error {
			return Bars(p, "T", "grants/s", []Bar{{Label: "a", Value: 0}}, false)
		}, []string{"a", "0", "grants/s"}},
		{"bars negative linear", func(p string) error {
			return Bars(p, "T", "grants/s", []Bar{{Label: "a", Value: -5}, {Label: "b", Value: 10}}, false)
		}, []string{"-5", "10"}},
		{"bars NaN and Inf", func(p string) error {
			return Bars(p, "T", "ms", []Bar{{Label: "a", Value: nan}, {Label: "b", Value: math.Inf(1)}, {Label: "c", Value: 2}}, true)
		}, []string{"a", "b", "c", "n/a", "2"}},
		{"bars in µs with long names", func(p string) error {
			return Bars(p, "T", "µs", []Bar{{Label: "redisson (pubsub)", Value: 80}, {Label: "writer-preferring (pubsub)", Value: 90}, {Label: "redsync (poll)", Value: 150000}}, true)
		}, []string{"redisson (pubsub)", "writer-preferring (pubsub)", "redsync (poll)", "µs (log scale)", "80", "150000"}},
		{"bars all NaN", func(p string) error {
			return Bars(p, "T", "ms", []Bar{{Label: "a", Value: nan}}, true)
		}, []string{"a", "n/a"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".svg")
			if err := tc.draw(path); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			checkSVG(t, path, tc.want...)
		})
	}
}

// TestChartLongTitle checks that a title too wide for the chart is broken
// into lines, with every word kept.
func TestLongTitle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bars.svg")
	title := "handoff latency p50: Unlock called to waiter granted (lower is better), every contender and every wake-up path, median of the repetitions"
	if err := Bars(path, title, "µs", []Bar{{Label: "a", Value: 80}, {Label: "b", Value: 55000}}, true); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, path)
	// The title is drawn first, in two lines or more.
	broken := false
	for k := 2; k <= len(texts); k++ {
		broken = broken || strings.Join(texts[:k], " ") == title
	}
	if !broken {
		t.Errorf("texts %q do not start with %q broken into two lines or more", texts, title)
	}
	if w := wrap(textStyle(10, false), "a b c", 1000); w != "a b c" {
		t.Errorf("wrap of a short line = %q", w)
	}
	if w := wrap(textStyle(10, false), "abcdefgh ij\nk", 1); w != "abcdefgh\nij\nk" {
		t.Errorf("wrap to a narrow width = %q", w)
	}
}

func TestFormats(t *testing.T) {
	dir := t.TempDir()
	series := []WaitSeries{{Label: "a", Waits: []time.Duration{millisecs(1), millisecs(2)}}}
	path := filepath.Join(dir, "cdf.png")
	if err := WaitDistribution(path, "T", series); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 8*rasterDPI || b.Dy() != 4.5*rasterDPI {
		t.Errorf("PNG is %v, want %dx%d", b, 8*rasterDPI, int(4.5*rasterDPI))
	}
	for _, bad := range []string{"cdf", "cdf.nope"} {
		if err := WaitDistribution(filepath.Join(dir, bad), "T", series); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if err := Bars(filepath.Join(dir, "no-such-dir", "bars.svg"), "T", "ms", []Bar{{Label: "a", Value: 1}}, false); err == nil {
		t.Error("a chart in a missing directory: no error")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files left in %s: %v, want only cdf.png", dir, entries)
	}
}
