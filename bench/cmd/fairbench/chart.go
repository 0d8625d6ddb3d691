package main

// Charts of fairbench's results, drawn with gonum.org/v1/plot: the
// distribution of waits per contender (an empirical CDF), waits over the
// run's time (a scatter) and one bar per contender for a metric. Each
// function writes one file whose format follows the path's extension
// (.svg, .png, or any other format gonum/plot knows, such as .pdf).

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/fairrw/rwlock/internal/fairness"
)

// waitSeries is one contender's waits of one class.
type waitSeries struct {
	Label    string          // e.g. "redisson", "writer-preferring"
	Waits    []time.Duration // timed-out requests included at their timeout
	TimedOut int             // how many of Waits are timeouts (the legend says so)
}

// timePoint is one request: when it was asked (since the run's start) and
// how long it waited.
type timePoint struct {
	At       time.Duration
	Wait     time.Duration
	TimedOut bool
}

// timeSeries is one contender's requests over a run.
type timeSeries struct {
	Label  string
	Points []timePoint
}

// bar is one contender's value of a metric, e.g. grants/s in the contended
// scenario.
type bar struct {
	Label string
	Value float64
}

// waitSeriesOf returns the waits of reqs (one class of one run) under label.
func waitSeriesOf(label string, reqs []fairness.Request) waitSeries {
	s := waitSeries{Label: label, Waits: make([]time.Duration, len(reqs))}
	for i, q := range reqs {
		s.Waits[i] = q.Wait
		if q.TimedOut {
			s.TimedOut++
		}
	}
	return s
}

// timeSeriesOf returns reqs (one class of one run started at start) as
// points in time under label.
func timeSeriesOf(label string, reqs []fairness.Request, start time.Time) timeSeries {
	s := timeSeries{Label: label, Points: make([]timePoint, len(reqs))}
	for i, q := range reqs {
		s.Points[i] = timePoint{At: q.Asked.Sub(start), Wait: q.Wait, TimedOut: q.TimedOut}
	}
	return s
}

const (
	// chartWidth x chartHeight is the size of every chart.
	chartWidth  = 8 * vg.Inch
	chartHeight = 4.5 * vg.Inch
	// chartDPI is the resolution of raster (.png) charts.
	chartDPI = 150
	// chartWaitFloorMS is the least wait a log axis shows: shorter waits (0
	// included) are drawn at it, and the axis label says so.
	chartWaitFloorMS = 0.01
)

// chartMillis is d in milliseconds.
func chartMillis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
		xs = append(xs, chartMillis(w))
		ys = append(ys, float64(i+1)/n)
	}
	return xs, ys
}

// waitDistributionChart writes to path an empirical CDF of the waits of
// each series (x: wait in ms, log scale; y: share of requests granted
// within x, timed-out requests counting at their timeout), one line per
// series. A starved class shows as a curve that reaches 1 only at the
// window. Empty series are left out; with none left the chart says "no
// data".
func waitDistributionChart(path, title string, series []waitSeries) error {
	p := newChart(title)
	p.X.Label.Text = "wait from asking to grant (ms, log scale)\ntimed-out requests count at their timeout"
	p.Y.Label.Text = "share of requests granted within x"
	leg := newChartLegend()

	lo, hi := math.Inf(1), math.Inf(-1)
	clamped := false
	type curve struct {
		s      waitSeries
		xs, ys []float64
	}
	var curves []curve
	for _, s := range series {
		xs, ys := ecdf(s.Waits)
		if len(xs) == 0 {
			continue
		}
		for i, x := range xs {
			if x < chartWaitFloorMS {
				xs[i] = chartWaitFloorMS
				clamped = true
			}
		}
		lo, hi = math.Min(lo, xs[0]), math.Max(hi, xs[len(xs)-1])
		curves = append(curves, curve{s, xs, ys})
	}
	if len(curves) == 0 {
		return saveChart(chartNoData(p), nil, path)
	}
	if clamped {
		p.X.Label.Text += fmt.Sprintf("\nwaits under %g ms drawn at %g ms", chartWaitFloorMS, chartWaitFloorMS)
	}

	grid := plotter.NewGrid()
	grid.Vertical.Color = chartGridColor
	grid.Horizontal.Color = chartGridColor
	p.Add(grid)
	for i, c := range curves {
		// The curve rises from 0 at the first wait, then steps up at
		// each wait (PostStep: along, then up).
		xys := make(plotter.XYs, 0, len(c.xs)+1)
		xys = append(xys, plotter.XY{X: c.xs[0], Y: 0})
		for j := range c.xs {
			xys = append(xys, plotter.XY{X: c.xs[j], Y: c.ys[j]})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("chart %s: %s: %w", path, c.s.Label, err)
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = draw.LineStyle{Color: chartColor(i), Width: vg.Points(2), Dashes: chartDashes(i)}
		p.Add(l)
		leg.Add(chartCDFLabel(c.s.Label, len(c.s.Waits), c.s.TimedOut), l)
	}
	chartLogAxis(&p.X, lo, hi)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(chartShareTicks())
	return saveChart(p, leg, path)
}

// waitOverTimeChart writes to path a scatter of each series' requests (x:
// time since the run's start in s; y: wait in ms, log scale), each series
// with its own color and glyph; timed-out requests are crosses of the
// series' color, with their own legend entry. Empty series are left out;
// with none left the chart says "no data".
func waitOverTimeChart(path, title string, series []timeSeries) error {
	p := newChart(title)
	p.X.Label.Text = "time since the run's start, when asked (s)"
	p.Y.Label.Text = "wait (ms, log scale)"
	leg := newChartLegend()

	total := 0
	for _, s := range series {
		total += len(s.Points)
	}
	radius := vg.Points(2.5)
	if total > 2000 {
		radius = vg.Points(1.5)
	}

	loW, hiW := math.Inf(1), math.Inf(-1)
	hiT := 0.0
	clamped := false
	var scatters []*plotter.Scatter
	k := 0 // index of the non-empty series: its color and glyph
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		var granted, timedOut plotter.XYs
		for _, pt := range s.Points {
			x := math.Max(pt.At.Seconds(), 0)
			y := chartMillis(pt.Wait)
			if y < chartWaitFloorMS {
				y = chartWaitFloorMS
				clamped = true
			}
			loW, hiW, hiT = math.Min(loW, y), math.Max(hiW, y), math.Max(hiT, x)
			if pt.TimedOut {
				timedOut = append(timedOut, plotter.XY{X: x, Y: y})
			} else {
				granted = append(granted, plotter.XY{X: x, Y: y})
			}
		}
		col := chartColor(k)
		if len(granted) > 0 {
			sc, err := plotter.NewScatter(granted)
			if err != nil {
				return fmt.Errorf("chart %s: %s: %w", path, s.Label, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: chartTranslucent(col), Radius: radius, Shape: chartGlyph(k)}
			scatters = append(scatters, sc)
			leg.Add(fmt.Sprintf("%s (%d granted)", s.Label, len(granted)), chartLegendGlyph{sc.GlyphStyle})
		}
		if len(timedOut) > 0 {
			sc, err := plotter.NewScatter(timedOut)
			if err != nil {
				return fmt.Errorf("chart %s: %s: %w", path, s.Label, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: radius + vg.Points(1.5), Shape: chartCrossGlyph{}}
			scatters = append(scatters, sc)
			leg.Add(fmt.Sprintf("%s: %d timed out", s.Label, len(timedOut)), chartLegendGlyph{sc.GlyphStyle})
		}
		k++
	}
	if k == 0 {
		return saveChart(chartNoData(p), nil, path)
	}
	if clamped {
		p.Y.Label.Text += fmt.Sprintf("\nwaits under %g ms drawn at %g ms", chartWaitFloorMS, chartWaitFloorMS)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = chartGridColor
	p.Add(grid)
	for _, sc := range scatters {
		p.Add(sc)
	}
	p.X.Min, p.X.Max = 0, hiT
	if hiT == 0 {
		p.X.Max = 1
	}
	chartLogAxis(&p.Y, loW, hiW)
	return saveChart(p, leg, path)
}

// barChart writes to path one horizontal bar per entry of bars, top to
// bottom in the order given, each with its value written after it; unit
// labels the value axis (e.g. "ms", "grants/s"). logScale draws the value
// axis on a log scale, for values spanning decades: bars then start at the
// power of ten below the least positive value, and values <= 0 are drawn
// there (the axis label says so). NaN or infinite values get no bar and
// read "n/a". With no bars the chart says "no data".
func barChart(path, title, unit string, bars []bar, logScale bool) error {
	p := newChart(title)
	p.X.Label.Text = unit
	if len(bars) == 0 {
		return saveChart(chartNoData(p), nil, path)
	}

	n := len(bars)
	hb := &chartBars{
		pos:    make([]float64, n),
		vals:   make([]float64, n),
		labels: make([]string, n),
		colors: make([]color.Color, n),
		style:  chartTextStyle(10, false),
	}
	names := make([]string, n)
	minPos, lo, hi := math.Inf(1), math.Inf(1), math.Inf(-1)
	finite := 0
	for i, b := range bars {
		names[i] = b.Label
		hb.pos[i] = float64(n - 1 - i) // the first bar on top
		hb.colors[i] = chartColor(i)
		hb.vals[i] = b.Value
		if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) {
			hb.vals[i] = math.NaN()
			hb.labels[i] = "n/a"
			continue
		}
		finite++
		hb.labels[i] = chartValueLabel(b.Value)
		lo, hi = math.Min(lo, b.Value), math.Max(hi, b.Value)
		if b.Value > 0 {
			minPos = math.Min(minPos, b.Value)
		}
	}
	var scale, note string
	switch {
	case finite == 0:
		hb.base = 0
		p.X.Min, p.X.Max = 0, 1
	case logScale && !math.IsInf(minPos, 1):
		// Bars start a decade boundary below the least value, so that
		// the least bar still has a length.
		base := math.Pow10(int(math.Floor(math.Log10(minPos) + 1e-9)))
		if base >= minPos {
			base /= 10
		}
		hb.base = base
		clamped := false
		for i, v := range hb.vals {
			if v <= 0 { // NaN stays NaN: v <= 0 is false
				hb.vals[i] = base
				clamped = true
			}
		}
		chartLogAxis(&p.X, base, math.Max(hi, minPos))
		scale = "log scale"
		if clamped {
			note = fmt.Sprintf("values <= 0 drawn at %g", base)
		}
	default:
		if logScale {
			note = "not log scale: no value is positive"
		}
		hb.base = 0
		p.X.Min, p.X.Max = math.Min(lo, 0), math.Max(hi, 0)
		if p.X.Min == p.X.Max {
			p.X.Max = 1
		}
	}
	p.X.Label.Text = chartUnitLabel(unit, scale, note)
	grid := plotter.NewGrid()
	grid.Vertical.Color = chartGridColor
	grid.Horizontal.Color = nil
	p.Add(grid, hb)
	p.NominalY(names...)
	p.Y.Tick.Marker = plot.ConstantTicks(chartNominalTicks(names))
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	return saveChart(p, nil, path)
}

// chartUnitLabel is a value axis' label: unit, with scale inside its
// parentheses ("ms (log scale)", "handoff p50 (ms, log scale)"), then note
// on a line of its own.
func chartUnitLabel(unit, scale, note string) string {
	l := unit
	switch {
	case scale == "":
	case strings.HasSuffix(unit, ")"):
		l = unit[:len(unit)-1] + ", " + scale + ")"
	case unit == "":
		l = scale
	default:
		l = unit + " (" + scale + ")"
	}
	if note != "" {
		l += "\n" + note
	}
	return strings.TrimPrefix(l, "\n")
}

// chartBars is a plot.Plotter of horizontal bars from base to each value at
// its position on a nominal Y axis, each with its color and its value
// label after its end.
type chartBars struct {
	pos, vals []float64 // NaN values get no bar
	labels    []string
	colors    []color.Color
	base      float64
	style     text.Style
}

// chartBarLabelGap separates a bar's end from its label.
const chartBarLabelGap = vg.Length(4)

func (b *chartBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// Bars take 70% of the distance between two categories.
	half := 0.35 * (trY(1) - trY(0))
	if half <= 0 || len(b.pos) < 2 {
		half = 0.35 * (c.Max.Y - c.Min.Y)
	}
	x0 := trX(b.base)
	for i, v := range b.vals {
		y := trY(b.pos[i])
		end := x0
		if !math.IsNaN(v) {
			end = trX(v)
			pts := []vg.Point{{X: x0, Y: y - half}, {X: x0, Y: y + half}, {X: end, Y: y + half}, {X: end, Y: y - half}}
			c.FillPolygon(b.colors[i], c.ClipPolygonXY(pts))
		}
		sty, at := b.labelAt(i, end, y)
		c.FillText(sty, at, b.labels[i])
	}
}

// labelAt returns the style and the anchor of bar i's label, for a bar
// ending at x at height y: after the end, or before it for a bar that
// runs left of its base.
func (b *chartBars) labelAt(i int, x, y vg.Length) (text.Style, vg.Point) {
	sty := b.style
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	// Raised by the descent, as the axis' tick labels are.
	y += sty.FontExtents().Descent
	if !math.IsNaN(b.vals[i]) && b.vals[i] < b.base {
		sty.XAlign = draw.XRight
		return sty, vg.Point{X: x - chartBarLabelGap, Y: y}
	}
	return sty, vg.Point{X: x + chartBarLabelGap, Y: y}
}

func (b *chartBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = b.base, b.base
	for _, v := range b.vals {
		if !math.IsNaN(v) {
			xmin, xmax = math.Min(xmin, v), math.Max(xmax, v)
		}
	}
	return xmin, xmax, -0.5, float64(len(b.vals)) - 0.5
}

// GlyphBoxes makes room for the value labels: the plot shrinks its data
// area so that none is cut.
func (b *chartBars) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	boxes := make([]plot.GlyphBox, len(b.vals))
	for i, v := range b.vals {
		if math.IsNaN(v) {
			v = b.base
		}
		sty, _ := b.labelAt(i, 0, 0)
		r := sty.Rectangle(b.labels[i])
		if sty.XAlign == draw.XLeft {
			r = r.Add(vg.Point{X: chartBarLabelGap})
		} else {
			r = r.Add(vg.Point{X: -chartBarLabelGap})
		}
		boxes[i] = plot.GlyphBox{X: p.X.Norm(v), Y: p.Y.Norm(b.pos[i]), Rectangle: r}
	}
	return boxes
}

// chartValueLabel writes v with three significant digits, without exponent
// or trailing zeros: 0.0834, 0.08, 55, 150, 12346.
func chartValueLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	dec := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	dec = min(max(dec, 0), 9)
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// chartNominalTicks labels category i (the first on top) with names[i].
func chartNominalTicks(names []string) []plot.Tick {
	ticks := make([]plot.Tick, len(names))
	for i, name := range names {
		ticks[i] = plot.Tick{Value: float64(len(names) - 1 - i), Label: name}
	}
	return ticks
}

// chartShareTicks are the ticks of a 0..1 axis.
func chartShareTicks() []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= 20; i++ {
		v := float64(i) / 20
		t := plot.Tick{Value: v}
		if i%5 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// chartLogAxis makes a a log axis from the power of ten at or below lo to
// the one above hi (lo and hi > 0), so that the greatest value is not
// drawn on the axis' edge, labelled at every power of ten.
func chartLogAxis(a *plot.Axis, lo, hi float64) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = chartDecadeTicks{}
	a.Min = math.Pow10(int(math.Floor(math.Log10(lo) + 1e-9)))
	a.Max = math.Pow10(int(math.Floor(math.Log10(hi)+1e-9)) + 1)
	if a.Max <= a.Min {
		a.Max = a.Min * 10
	}
}

// chartDecadeTicks marks a log axis: a labelled tick at every power of ten and
// unlabelled ones at 2..9 times it (labelled at 2 and 5 on a short axis). (plot.LogTicks rounds log10(0.1) to 0
// and so leaves out the decade below 1 when the axis starts at 0.1.)
type chartDecadeTicks struct{}

func (chartDecadeTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	// Over two decades or less, 2 and 5 times a power of ten are
	// labelled too.
	few := hi/lo <= 100*(1+1e-9)
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(lo) + 1e-9)); e <= int(math.Ceil(math.Log10(hi)-1e-9)); e++ {
		d := math.Pow10(e)
		for m := 1; m < 10; m++ {
			v := d * float64(m)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			switch {
			case m == 1:
				t.Label = chartDecadeLabel(e)
			case few && (m == 2 || m == 5):
				t.Label = chartValueLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// chartDecadeLabel writes 10^e plainly (0.01, 1, 1000) between 10^-4 and 10^6.
func chartDecadeLabel(e int) string {
	if e < -4 || e > 6 {
		return "1e" + strconv.Itoa(e)
	}
	return strconv.FormatFloat(math.Pow10(e), 'f', -1, 64)
}

// chartCDFLabel is a CDF's legend entry: the label, its count and its
// timeouts.
func chartCDFLabel(label string, n, timedOut int) string {
	if timedOut > 0 {
		return fmt.Sprintf("%s (%d, %d timed out)", label, n, timedOut)
	}
	return fmt.Sprintf("%s (%d)", label, n)
}

// chartPalette is Okabe and Ito's colorblind-safe chartPalette (without its yellow,
// too light on white), then grey.
var chartPalette = []color.Color{
	color.NRGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.NRGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.NRGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.NRGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.NRGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.NRGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.NRGBA{0x00, 0x00, 0x00, 0xFF}, // black
	color.NRGBA{0x88, 0x88, 0x88, 0xFF}, // grey
}

var chartGridColor = color.NRGBA{0xDD, 0xDD, 0xDD, 0xFF}

func chartColor(i int) color.Color { return chartPalette[i%len(chartPalette)] }

// chartTranslucent returns c at 70% opacity, so that stacked glyphs show.
func chartTranslucent(c color.Color) color.Color {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = 0xB3
	return n
}

// chartDashes tells lines apart where they overlap: solid, dashed,
// dotted, dash-dotted, long-dashed, then again.
func chartDashes(i int) []vg.Length {
	switch i % 5 {
	case 1:
		return []vg.Length{vg.Points(7), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	case 3:
		return []vg.Length{vg.Points(7), vg.Points(2), vg.Points(2), vg.Points(2)}
	case 4:
		return []vg.Length{vg.Points(12), vg.Points(4)}
	}
	return nil
}

// chartGlyph is series i's glyph: filled shapes, then outlines (the cross
// is kept for timeouts).
func chartGlyph(i int) draw.GlyphDrawer {
	glyphs := []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{},
		draw.RingGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PlusGlyph{},
	}
	return glyphs[i%len(glyphs)]
}

// chartCrossGlyph is a bold X: a timed-out request.
type chartCrossGlyph struct{}

func (chartCrossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	r := sty.Radius * 0.75
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}

// chartLegendGlyph is a legend thumbnail of a glyph, drawn a little larger
// than in the plot so that it can be made out.
type chartLegendGlyph struct{ sty draw.GlyphStyle }

func (g chartLegendGlyph) Thumbnail(c *draw.Canvas) {
	sty := g.sty
	sty.Radius = max(sty.Radius, vg.Points(3.5))
	c.DrawGlyph(sty, c.Center())
}

func chartFont(size float64, bold bool) font.Font {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return font.From(f, vg.Points(size))
}

func chartTextStyle(size float64, bold bool) text.Style {
	return text.Style{Color: color.Black, Font: chartFont(size, bold), Handler: plot.DefaultTextHandler}
}

// newChart returns a plot titled title in the charts' fonts.
func newChart(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = chartFont(14, true)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = chartFont(11, false)
		a.Tick.Label.Font = chartFont(10, false)
	}
	p.Legend.TextStyle.Font = chartFont(10, false)
	return p
}

// newChartLegend returns an empty legend for the strip right of the plot.
func newChartLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = chartFont(10, false)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(3)
	l.ThumbnailWidth = vg.Points(24)
	return &l
}

// chartNoData turns p into an empty chart that says "no data", keeping its
// title and axis labels.
func chartNoData(p *plot.Plot) *plot.Plot {
	p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
	p.HideAxes()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(chartNoDataNote{chartTextStyle(16, false)})
	return p
}

type chartNoDataNote struct{ style text.Style }

func (n chartNoDataNote) Plot(c draw.Canvas, _ *plot.Plot) {
	sty := n.style
	sty.Color = color.NRGBA{0x77, 0x77, 0x77, 0xFF}
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	c.FillText(sty, c.Center(), "no data")
}

// saveChart draws p, with leg (if it has entries) in a strip on its
// right, at chartWidth x chartHeight, and writes it to path in the format
// of path's extension. A panic of gonum/plot becomes an error.
func saveChart(p *plot.Plot, leg *plot.Legend, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %s: drawing failed: %v", path, r)
		}
	}()
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var c vg.CanvasWriterTo
	switch format {
	case "svg":
		c = vgsvg.New(chartWidth, chartHeight)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(chartDPI))}
	case "":
		return fmt.Errorf("chart %s: no extension to tell the format (want .svg or .png)", path)
	default:
		if c, err = draw.NewFormattedCanvas(chartWidth, chartHeight, format); err != nil {
			return fmt.Errorf("chart %s: %w", path, err)
		}
	}
	dc := draw.New(c)
	// Leave a margin around the chart.
	dc = draw.Crop(dc, vg.Points(6), -vg.Points(10), vg.Points(6), -vg.Points(8))
	drawChart(p, leg, dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	out := buf.Bytes()
	if format == "svg" {
		// The SVG names the font without embedding it: fall back on
		// Arial or Helvetica (the same metrics), then any sans-serif.
		out = bytes.ReplaceAll(out, []byte("font-family:Liberation Sans;"),
			[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	}
	return writeChartFile(path, bytes.NewReader(out))
}

// drawChart draws p on dc: its title centered over the whole chart, leg
// (if it has entries) in a strip on the right below the title, and p's
// axis labels centered on its data area. (gonum/plot places the box of
// an axis label at the axis' arithmetic middle, which on a log axis is
// near its end, and then shrinks the data area to make room for it.)
func drawChart(p *plot.Plot, leg *plot.Legend, dc draw.Canvas) {
	title, xl, yl := p.Title.Text, p.X.Label.Text, p.Y.Label.Text
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "", "", ""
	defer func() { p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xl, yl }()

	if title != "" {
		sty := p.Title.TextStyle
		title = chartWrap(sty, title, 0.95*(dc.Max.X-dc.Min.X))
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y + sty.FontExtents().Descent}, title)
		dc.Max.Y -= sty.Rectangle(title).Size().Y + p.Title.Padding
	}
	pc := dc
	if leg != nil && leg.Rectangle(dc).Size().X > 0 {
		w := chartLegendWidth(leg)
		pc.Max.X -= w
		strip := dc
		strip.Min.X = dc.Max.X - w + vg.Points(12)
		leg.Draw(strip)
	}
	// The labels are centered on the data area, which is narrower than
	// pc by the width of the ticks' labels.
	xl = chartWrap(p.X.Label.TextStyle, xl, 0.85*(pc.Max.X-pc.Min.X))
	yl = chartWrap(p.Y.Label.TextStyle, yl, 0.8*(pc.Max.Y-pc.Min.Y))
	inner := pc
	if xl != "" {
		inner.Min.Y += p.X.Label.TextStyle.Height(xl) + p.X.Label.Padding
	}
	if yl != "" {
		inner.Min.X += p.Y.Label.TextStyle.Height(yl) + p.Y.Label.Padding
	}
	p.Draw(inner)
	data := p.DataCanvas(inner)
	if xl != "" {
		sty := p.X.Label.TextStyle
		pc.FillText(sty, vg.Point{X: data.Center().X, Y: pc.Min.Y + sty.FontExtents().Descent}, xl)
	}
	if yl != "" {
		sty := p.Y.Label.TextStyle
		sty.Rotation += math.Pi / 2
		x := pc.Min.X + p.Y.Label.TextStyle.Height(yl) - p.Y.Label.TextStyle.FontExtents().Descent
		pc.FillText(sty, vg.Point{X: x, Y: data.Center().Y}, yl)
	}
}

// chartWrap breaks each line of s at spaces so that no line is wider than
// w in sty; a word wider than w stays whole on its line.
func chartWrap(sty text.Style, s string, w vg.Length) string {
	if sty.Width(s) <= w {
		return s
	}
	var lines []string
	for line := range strings.SplitSeq(s, "\n") {
		words := strings.Fields(line)
		if len(words) == 0 {
			lines = append(lines, line)
			continue
		}
		cur := words[0]
		for _, word := range words[1:] {
			if sty.Width(cur+" "+word) > w {
				lines = append(lines, cur)
				cur = word
			} else {
				cur += " " + word
			}
		}
		lines = append(lines, cur)
	}
	return strings.Join(lines, "\n")
}

// chartLegendWidth is the width of the strip leg needs, at most 40% of the
// chart. It leaves a fifth more for the text, for an SVG viewer that has
// to use a wider font than Liberation Sans.
func chartLegendWidth(leg *plot.Legend) vg.Length {
	w := leg.Rectangle(draw.Canvas{}).Size().X
	w += (w-leg.ThumbnailWidth)/5 + vg.Points(16)
	return min(w, 0.4*chartWidth)
}

// writeChartFile writes r to path through a temporary file in the same
// directory, so that a failed write leaves no half chart.
func writeChartFile(path string, r io.Reader) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	_, err = io.Copy(f, r)
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("chart %s: %w", path, err)
	}
	return nil
}
