package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bars writes to path one horizontal Bar per entry of bars, top to
// bottom in the order given, each with its value written after it; unit
// labels the value axis (e.g. "ms", "grants/s"). logScale draws the value
// axis on a log scale, for values spanning decades: bars then start at the
// power of ten below the least positive value, and values <= 0 are drawn
// there (the axis label says so). NaN or infinite values get no Bar and
// read "n/a". With no bars the chart says "no data".
func Bars(path, title, unit string, bars []Bar, logScale bool) error {
	p := newPlot(title)
	p.X.Label.Text = unit
	if len(bars) == 0 {
		return save(noData(p), nil, path)
	}

	n := len(bars)
	hb := &barsPlotter{
		pos:    make([]float64, n),
		vals:   make([]float64, n),
		labels: make([]string, n),
		colors: make([]color.Color, n),
		style:  textStyle(10, false),
	}
	names := make([]string, n)
	minPos, lo, hi := math.Inf(1), math.Inf(1), math.Inf(-1)
	finite := 0
	for i, b := range bars {
		names[i] = b.Label
		hb.pos[i] = float64(n - 1 - i) // the first Bar on top
		hb.colors[i] = colorOf(b.Slot)
		hb.vals[i] = b.Value
		if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) {
			hb.vals[i] = math.NaN()
			hb.labels[i] = "n/a"
			continue
		}
		finite++
		hb.labels[i] = valueLabel(b.Value)
		if b.Note != "" {
			hb.labels[i] += "  " + b.Note
		}
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
		// the least Bar still has a length.
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
		logAxis(&p.X, base, math.Max(hi, minPos))
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
	p.X.Label.Text = unitLabel(unit, scale, note)
	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = nil
	p.Add(grid, hb)
	p.NominalY(names...)
	p.Y.Tick.Marker = plot.ConstantTicks(nominalTicks(names))
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	return save(p, nil, path)
}

// barsPlotter is a plot.Plotter of horizontal bars from base to each value at
// its position on a nominal Y axis, each with its color and its value
// label after its end.
type barsPlotter struct {
	pos, vals []float64 // NaN values get no Bar
	labels    []string
	colors    []color.Color
	base      float64
	style     text.Style
}

// barLabelGap separates a bar's end from its label.
const barLabelGap = vg.Length(4)

func (b *barsPlotter) Plot(c draw.Canvas, p *plot.Plot) {
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

// labelAt returns the style and the anchor of Bar i's label, for a Bar
// ending at x at height y: after the end, or before it for a Bar that
// runs left of its base.
func (b *barsPlotter) labelAt(i int, x, y vg.Length) (text.Style, vg.Point) {
	sty := b.style
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	// Raised by the descent, as the axis' tick labels are.
	y += sty.FontExtents().Descent
	if !math.IsNaN(b.vals[i]) && b.vals[i] < b.base {
		sty.XAlign = draw.XRight
		return sty, vg.Point{X: x - barLabelGap, Y: y}
	}
	return sty, vg.Point{X: x + barLabelGap, Y: y}
}

func (b *barsPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
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
func (b *barsPlotter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	boxes := make([]plot.GlyphBox, len(b.vals))
	for i, v := range b.vals {
		if math.IsNaN(v) {
			v = b.base
		}
		sty, _ := b.labelAt(i, 0, 0)
		r := sty.Rectangle(b.labels[i])
		if sty.XAlign == draw.XLeft {
			r = r.Add(vg.Point{X: barLabelGap})
		} else {
			r = r.Add(vg.Point{X: -barLabelGap})
		}
		boxes[i] = plot.GlyphBox{X: p.X.Norm(v), Y: p.Y.Norm(b.pos[i]), Rectangle: r}
	}
	return boxes
}
