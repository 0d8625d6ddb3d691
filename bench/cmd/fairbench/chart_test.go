package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/fairrw/rwlock/internal/fairness"
)

// chartSVGTexts checks that path is a well-formed, NaN-free SVG document and
// returns the content of its <text> elements.
func chartSVGTexts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty", path)
	}
	for _, bad := range []string{"NaN", "Inf"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("%s contains %q", path, bad)
		}
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var (
		texts  []string
		depth  int
		root   string
		inText bool
		cur    strings.Builder
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = tok.Name.Local
			}
			depth++
			if tok.Name.Local == "text" {
				inText = true
				cur.Reset()
			}
		case xml.EndElement:
			depth--
			if tok.Name.Local == "text" {
				inText = false
				texts = append(texts, cur.String())
			}
		case xml.CharData:
			if inText {
				cur.Write(tok)
			}
		}
	}
	if root != "svg" || depth != 0 {
		t.Fatalf("%s: root element %q, depth at the end %d", path, root, depth)
	}
	return texts
}

// checkChartSVG checks that path is a valid SVG with a text element equal to
// each of want.
func checkChartSVG(t *testing.T, path string, want ...string) {
	t.Helper()
	texts := chartSVGTexts(t, path)
	for _, w := range want {
		if !slices.Contains(texts, w) {
			t.Errorf("%s has no text %q; it has %q", filepath.Base(path), w, texts)
		}
	}
}

func chartMS(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestChartECDF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waits  []time.Duration
		xs, ys []float64
	}{
		{"none", nil, nil, nil},
		{"one", []time.Duration{chartMS(7)}, []float64{7}, []float64{1}},
		// Sorted: 0 0.5 2 2 3 -> at 0: 1/5, at 0.5: 2/5, at 2: 4/5, at 3: 5/5.
		{"ties and zero", []time.Duration{chartMS(3), chartMS(2), 0, chartMS(2), 500 * time.Microsecond},
			[]float64{0, 0.5, 2, 3}, []float64{0.2, 0.4, 0.8, 1}},
		// Sorted: 1 1 1 4000 5000 5000 (two timeouts at the window).
		{"timeouts at the window", []time.Duration{chartMS(5000), chartMS(1), chartMS(4000), chartMS(1), chartMS(5000), chartMS(1)},
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

func TestChartSeriesOfRequests(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	reqs := []fairness.Request{
		{Class: fairness.Writer, Asked: start.Add(100 * time.Millisecond), Wait: chartMS(12)},
		{Class: fairness.Writer, Asked: start.Add(2 * time.Second), Wait: 5 * time.Second, TimedOut: true},
	}
	ws := waitSeriesOf("redisson", reqs)
	if ws.Label != "redisson" || ws.TimedOut != 1 || !slices.Equal(ws.Waits, []time.Duration{chartMS(12), 5 * time.Second}) {
		t.Errorf("waitSeriesOf = %+v", ws)
	}
	ts := timeSeriesOf("redisson", reqs, start)
	want := []timePoint{{At: 100 * time.Millisecond, Wait: chartMS(12)}, {At: 2 * time.Second, Wait: 5 * time.Second, TimedOut: true}}
	if ts.Label != "redisson" || !slices.Equal(ts.Points, want) {
		t.Errorf("timeSeriesOf = %+v", ts)
	}
}

func TestChartWaitDistribution(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cdf.svg")
	series := []waitSeries{
		{Label: "redisson", Waits: []time.Duration{chartMS(0.2), chartMS(40), chartMS(900), chartMS(5000), chartMS(5000)}, TimedOut: 2},
		{Label: "writer-preferring", Waits: []time.Duration{chartMS(5), chartMS(9), chartMS(25)}},
		{Label: "phase-fair", Waits: []time.Duration{chartMS(6), chartMS(20)}},
	}
	if err := waitDistributionChart(path, "Writer waits under the reader flood", series); err != nil {
		t.Fatal(err)
	}
	checkChartSVG(t, path, "Writer waits under the reader flood",
		"redisson (5, 2 timed out)", "writer-preferring (3)", "phase-fair (2)",
		"share of requests granted within x", "wait from asking to grant (ms, log scale)", "timed-out requests count at their timeout",
		"0.1", "1", "10000")
}

func TestChartWaitOverTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scatter.svg")
	series := []timeSeries{
		{Label: "redisson", Points: []timePoint{
			{At: 0, Wait: chartMS(0.3)}, {At: time.Second, Wait: chartMS(800)}, {At: 2 * time.Second, Wait: 5 * time.Second, TimedOut: true},
		}},
		{Label: "phase-fair", Points: []timePoint{{At: 500 * time.Millisecond, Wait: chartMS(12)}, {At: 3 * time.Second, Wait: chartMS(20)}}},
	}
	if err := waitOverTimeChart(path, "Writer wait over time", series); err != nil {
		t.Fatal(err)
	}
	checkChartSVG(t, path, "Writer wait over time", "redisson (2 granted)", "redisson: 1 timed out", "phase-fair (2 granted)",
		"time since the run's start, when asked (s)", "wait (ms, log scale)")
}

func TestChartBars(t *testing.T) {
	bars := []bar{
		{"redisson", 0.08}, {"writer-preferring", 0.09}, {"phase-fair", 0.1},
		{"rueidislock", 0.09}, {"redislock", 55}, {"redsync", 150},
	}
	for _, logScale := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "bars.svg")
		if err := barChart(path, "Handoff p50", "ms", bars, logScale); err != nil {
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
		checkChartSVG(t, path, want...)
	}
}

func TestChartValueLabel(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.08: "0.08", 0.0834: "0.0834", 0.1: "0.1", 1: "1", 55: "55", 55.55: "55.5", 150: "150",
		12345.6: "12346", -3.25: "-3.25", 1e-12: "0",
	} {
		if got := chartValueLabel(v); got != want {
			t.Errorf("chartValueLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestChartUnitLabel(t *testing.T) {
	for _, tc := range [][4]string{
		{"ms", "", "", "ms"},
		{"ms", "log scale", "", "ms (log scale)"},
		{"handoff p50 (ms)", "log scale", "", "handoff p50 (ms, log scale)"},
		{"", "log scale", "", "log scale"},
		{"ms", "log scale", "values <= 0 drawn at 10", "ms (log scale)\nvalues <= 0 drawn at 10"},
		{"", "", "note", "note"},
	} {
		if got := chartUnitLabel(tc[0], tc[1], tc[2]); got != tc[3] {
			t.Errorf("chartUnitLabel(%q, %q, %q) = %q, want %q", tc[0], tc[1], tc[2], got, tc[3])
		}
	}
}

func TestChartLogAxis(t *testing.T) {
	for _, tc := range [][4]float64{
		// lo, hi, then the axis' min and max
		{0.05, 5000, 0.01, 10000},
		{0.01, 25, 0.01, 100},
		{10, 10, 10, 100},
		{0.1, 100, 0.1, 1000},
		{0.08, 150, 0.01, 1000},
	} {
		var p plot.Plot
		chartLogAxis(&p.X, tc[0], tc[1])
		if math.Abs(p.X.Min/tc[2]-1) > 1e-12 || math.Abs(p.X.Max/tc[3]-1) > 1e-12 {
			t.Errorf("chartLogAxis(%v, %v): %v..%v, want %v..%v", tc[0], tc[1], p.X.Min, p.X.Max, tc[2], tc[3])
		}
	}
}

func TestChartDecadeTicks(t *testing.T) {
	var labels []string
	for _, tk := range (chartDecadeTicks{}).Ticks(0.1, 1000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0.1", "1", "10", "100", "1000"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	labels = nil
	for _, tk := range (chartDecadeTicks{}).Ticks(10, 1000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"10", "20", "50", "100", "200", "500", "1000"}; !slices.Equal(labels, want) {
		t.Errorf("labels of a short axis %q, want %q", labels, want)
	}
	for _, r := range [][2]float64{{0, 1}, {1, 1}, {-1, 10}, {1, math.Inf(1)}, {math.NaN(), 1}} {
		if ticks := (chartDecadeTicks{}).Ticks(r[0], r[1]); ticks != nil {
			t.Errorf("Ticks(%v, %v) = %v", r[0], r[1], ticks)
		}
	}
}

// TestChartEdgeCases draws empty, degenerate and odd inputs: each must
// give a valid SVG, without a panic.
func TestChartEdgeCases(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	cases := []struct {
		name string
		draw func(path string) error
		want []string
	}{
		{"cdf nil", func(p string) error { return waitDistributionChart(p, "T", nil) }, []string{"T", "no data"}},
		{"cdf all empty", func(p string) error {
			return waitDistributionChart(p, "T", []waitSeries{{Label: "a"}, {Label: "b", Waits: []time.Duration{}}})
		}, []string{"T", "no data"}},
		{"cdf one empty", func(p string) error {
			return waitDistributionChart(p, "T", []waitSeries{{Label: "a"}, {Label: "b", Waits: []time.Duration{chartMS(3)}}})
		}, []string{"T", "b (1)"}},
		{"cdf zero waits", func(p string) error {
			return waitDistributionChart(p, "T", []waitSeries{{Label: "a", Waits: []time.Duration{0, 0, chartMS(2)}}})
		}, []string{"a (3)", "wait from asking to grant (ms, log scale)", "timed-out requests count at their timeout", "waits under 0.01 ms drawn at 0.01 ms"}},
		{"cdf only zeros", func(p string) error {
			return waitDistributionChart(p, "T", []waitSeries{{Label: "a", Waits: []time.Duration{0}}})
		}, []string{"a (1)"}},
		{"cdf one wait", func(p string) error {
			return waitDistributionChart(p, "T", []waitSeries{{Label: "a", Waits: []time.Duration{chartMS(10)}}})
		}, []string{"a (1)", "10", "100"}},
		{"cdf all timed out", func(p string) error {
			return waitDistributionChart(p, "T", []waitSeries{{Label: "a & <b>", Waits: []time.Duration{chartMS(5000), chartMS(5000)}, TimedOut: 2}})
		}, []string{"a & <b> (2, 2 timed out)"}},
		{"scatter nil", func(p string) error { return waitOverTimeChart(p, "T", nil) }, []string{"T", "no data"}},
		{"scatter all empty", func(p string) error {
			return waitOverTimeChart(p, "T", []timeSeries{{Label: "a"}})
		}, []string{"T", "no data"}},
		{"scatter one point at 0", func(p string) error {
			return waitOverTimeChart(p, "T", []timeSeries{{Label: "a", Points: []timePoint{{}}}})
		}, []string{"a (1 granted)", "wait (ms, log scale)", "waits under 0.01 ms drawn at 0.01 ms"}},
		{"scatter only timeouts", func(p string) error {
			return waitOverTimeChart(p, "T", []timeSeries{{Label: "a", Points: []timePoint{{At: -time.Second, Wait: time.Second, TimedOut: true}}}})
		}, []string{"a: 1 timed out"}},
		{"scatter many", func(p string) error {
			pts := make([]timePoint, 3000)
			for i := range pts {
				pts[i] = timePoint{At: time.Duration(i) * time.Millisecond, Wait: time.Duration(i) * time.Microsecond}
			}
			return waitOverTimeChart(p, "T", []timeSeries{{Label: "a", Points: pts}})
		}, []string{"a (3000 granted)"}},
		{"bars nil", func(p string) error { return barChart(p, "T", "ms", nil, true) }, []string{"T", "no data"}},
		{"bars one", func(p string) error { return barChart(p, "T", "ms", []bar{{"a", 3}}, true) }, []string{"a", "3"}},
		{"bars one of 1", func(p string) error { return barChart(p, "T", "ms", []bar{{"a", 1}}, true) }, []string{"a", "1"}},
		{"bars zero on log", func(p string) error {
			return barChart(p, "T", "ms", []bar{{"a", 0}, {"b", 20}, {"c", -1}}, true)
		}, []string{"a", "b", "c", "0", "20", "-1", "ms (log scale)", "values <= 0 drawn at 10"}},
		{"bars all zero on log", func(p string) error {
			return barChart(p, "T", "ms", []bar{{"a", 0}, {"b", 0}}, true)
		}, []string{"a", "b", "ms", "not log scale: no value is positive"}},
		{"bars all zero linear", func(p string) error {
			return barChart(p, "T", "grants/s", []bar{{"a", 0}}, false)
		}, []string{"a", "0", "grants/s"}},
		{"bars negative linear", func(p string) error {
			return barChart(p, "T", "grants/s", []bar{{"a", -5}, {"b", 10}}, false)
		}, []string{"-5", "10"}},
		{"bars NaN and Inf", func(p string) error {
			return barChart(p, "T", "ms", []bar{{"a", nan}, {"b", math.Inf(1)}, {"c", 2}}, true)
		}, []string{"a", "b", "c", "n/a", "2"}},
		{"bars in µs with long names", func(p string) error {
			return barChart(p, "T", "µs", []bar{{"redisson (pubsub)", 80}, {"writer-preferring (pubsub)", 90}, {"redsync (poll)", 150000}}, true)
		}, []string{"redisson (pubsub)", "writer-preferring (pubsub)", "redsync (poll)", "µs (log scale)", "80", "150000"}},
		{"bars all NaN", func(p string) error {
			return barChart(p, "T", "ms", []bar{{"a", nan}}, true)
		}, []string{"a", "n/a"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".svg")
			if err := tc.draw(path); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			checkChartSVG(t, path, tc.want...)
		})
	}
}

// TestChartLongTitle checks that a title too wide for the chart is broken
// into lines, with every word kept.
func TestChartLongTitle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bars.svg")
	title := "handoff latency p50: Unlock called to waiter granted (lower is better), every contender and every wake-up path, median of the repetitions"
	if err := barChart(path, title, "µs", []bar{{"a", 80}, {"b", 55000}}, true); err != nil {
		t.Fatal(err)
	}
	texts := chartSVGTexts(t, path)
	// The title is drawn first, in two lines or more.
	broken := false
	for k := 2; k <= len(texts); k++ {
		broken = broken || strings.Join(texts[:k], " ") == title
	}
	if !broken {
		t.Errorf("texts %q do not start with %q broken into two lines or more", texts, title)
	}
	if w := chartWrap(chartTextStyle(10, false), "a b c", 1000); w != "a b c" {
		t.Errorf("chartWrap of a short line = %q", w)
	}
	if w := chartWrap(chartTextStyle(10, false), "abcdefgh ij\nk", 1); w != "abcdefgh\nij\nk" {
		t.Errorf("chartWrap to a narrow width = %q", w)
	}
}

func TestChartFormats(t *testing.T) {
	dir := t.TempDir()
	series := []waitSeries{{Label: "a", Waits: []time.Duration{chartMS(1), chartMS(2)}}}
	path := filepath.Join(dir, "cdf.png")
	if err := waitDistributionChart(path, "T", series); err != nil {
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
	if b := img.Bounds(); b.Dx() != 8*chartDPI || b.Dy() != 4.5*chartDPI {
		t.Errorf("PNG is %v, want %dx%d", b, 8*chartDPI, int(4.5*chartDPI))
	}
	for _, bad := range []string{"cdf", "cdf.nope"} {
		if err := waitDistributionChart(filepath.Join(dir, bad), "T", series); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if err := barChart(filepath.Join(dir, "no-such-dir", "bars.svg"), "T", "ms", []bar{{"a", 1}}, false); err == nil {
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

// TestChartSamples draws every chart of synthetic data resembling real
// runs, as SVG and PNG, and checks each SVG's texts; with
// FAIRBENCH_CHART_SAMPLES=dir the charts stay in dir, to look at.
func TestChartSamples(t *testing.T) {
	dir := os.Getenv("FAIRBENCH_CHART_SAMPLES")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	window := 5 * time.Second
	logUniform := func(lo, hi float64) time.Duration { return chartMS(lo * math.Pow(hi/lo, rng.Float64())) }

	// Writer requests of the reader flood, closed loop: ask, wait, hold
	// 5ms, think 20ms. Redisson's writer waits behind the readers, up to
	// the window; four writers (as in writer-burst) time out 12 times.
	type gen func(at time.Duration) (time.Duration, bool)
	runOf := func(label string, next gen, workers int) timeSeries {
		s := timeSeries{Label: label}
		for range workers {
			for at := time.Duration(rng.Int64N(int64(20 * time.Millisecond))); at < window; {
				w, timedOut := next(at)
				s.Points = append(s.Points, timePoint{At: at, Wait: w, TimedOut: timedOut})
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
	fair := func(label string) timeSeries {
		return runOf(label, func(time.Duration) (time.Duration, bool) {
			return chartMS(5 + 20*rng.Float64()*rng.Float64()), false
		}, 1)
	}
	over := []timeSeries{redisson, fair("writer-preferring"), fair("phase-fair")}
	var dist []waitSeries
	for _, s := range over {
		ws := waitSeries{Label: s.Label}
		for _, p := range s.Points {
			ws.Waits = append(ws.Waits, p.Wait)
			if p.TimedOut {
				ws.TimedOut++
			}
		}
		dist = append(dist, ws)
	}
	handoff := []bar{
		{"redisson", 0.08}, {"writer-preferring", 0.09}, {"phase-fair", 0.1},
		{"rueidislock", 0.09}, {"redislock", 55}, {"redsync", 150},
	}
	grants := []bar{
		{"redisson", 4210}, {"writer-preferring", 3980}, {"phase-fair", 4105},
		{"rueidislock", 2890}, {"redislock", 36}, {"redsync", 12},
	}
	for _, ext := range []string{".svg", ".png"} {
		for name, draw := range map[string]func(string) error{
			"wait-distribution": func(p string) error {
				return waitDistributionChart(p, "reader-flood: writer wait distribution per policy (5s window)", dist)
			},
			"wait-over-time": func(p string) error {
				return waitOverTimeChart(p, "reader-flood: writer wait over time", over)
			},
			"handoff-p50": func(p string) error {
				return barChart(p, "Handoff latency p50 (release to the waiter's grant)", "handoff p50 (ms)", handoff, true)
			},
			"contended-grants": func(p string) error {
				return barChart(p, "contended: grants per second (8 writers, 2 clients)", "grants/s", grants, false)
			},
		} {
			path := filepath.Join(dir, name+ext)
			if err := draw(path); err != nil {
				t.Fatal(err)
			}
			if ext == ".svg" {
				chartSVGTexts(t, path)
			}
			t.Logf("wrote %s", path)
		}
	}
}
