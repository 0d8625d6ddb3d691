package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WaitOverTime writes to path a scatter of each series' requests (x:
// time since the run's start in s; y: wait in ms, log scale), each series
// with its own color and glyph; timed-out requests are crosses of the
// series' color, with their own legend entry. Empty series are left out;
// with none left the chart says "no data".
func WaitOverTime(path, title string, series []TimeSeries) error {
	p := newPlot(title)
	p.X.Label.Text = "time since the run's start, when asked (s)"
	p.Y.Label.Text = "wait (ms, log scale)"
	leg := newLegend()

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
	k := 0 // non-empty series
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		var granted, timedOut plotter.XYs
		for _, pt := range s.Points {
			x := math.Max(pt.At.Seconds(), 0)
			y := millis(pt.Wait)
			if y < waitFloorMS {
				y = waitFloorMS
				clamped = true
			}
			loW, hiW, hiT = math.Min(loW, y), math.Max(hiW, y), math.Max(hiT, x)
			if pt.TimedOut {
				timedOut = append(timedOut, plotter.XY{X: x, Y: y})
			} else {
				granted = append(granted, plotter.XY{X: x, Y: y})
			}
		}
		col := colorOf(s.Slot)
		if len(granted) > 0 {
			sc, err := plotter.NewScatter(granted)
			if err != nil {
				return fmt.Errorf("chart %s: %s: %w", path, s.Label, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: translucent(col), Radius: radius, Shape: glyphOf(s.Slot)}
			scatters = append(scatters, sc)
			leg.Add(fmt.Sprintf("%s (%d granted)", s.Label, len(granted)), legendGlyph{sc.GlyphStyle})
		}
		if len(timedOut) > 0 {
			sc, err := plotter.NewScatter(timedOut)
			if err != nil {
				return fmt.Errorf("chart %s: %s: %w", path, s.Label, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: radius + vg.Points(1.5), Shape: crossGlyph{}}
			scatters = append(scatters, sc)
			leg.Add(fmt.Sprintf("%s: %d timed out", s.Label, len(timedOut)), legendGlyph{sc.GlyphStyle})
		}
		k++
	}
	if k == 0 {
		return save(noData(p), nil, path)
	}
	if clamped {
		p.Y.Label.Text += fmt.Sprintf("\nwaits under %g ms drawn at %g ms", waitFloorMS, waitFloorMS)
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = gridColor
	p.Add(grid)
	for _, sc := range scatters {
		p.Add(sc)
	}
	p.X.Min, p.X.Max = 0, hiT
	if hiT == 0 {
		p.X.Max = 1
	}
	logAxis(&p.Y, loW, hiW)
	return save(p, leg, path)
}

// crossGlyph is a bold X: a timed-out request.
type crossGlyph struct{}

func (crossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	r := sty.Radius * 0.75
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}

// legendGlyph is a legend thumbnail of a glyph, drawn a little larger
// than in the plot so that it can be made out.
type legendGlyph struct{ sty draw.GlyphStyle }

func (g legendGlyph) Thumbnail(c *draw.Canvas) {
	sty := g.sty
	sty.Radius = max(sty.Radius, vg.Points(3.5))
	c.DrawGlyph(sty, c.Center())
}
