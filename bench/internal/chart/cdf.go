package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WaitDistribution writes to path an empirical CDF of the waits of
// each series (x: wait in ms, log scale; y: share of requests granted
// within x, timed-out requests counting at their timeout), one line per
// series. A starved class shows as a curve that reaches 1 only at the
// window. Empty series are left out; with none left the chart says "no
// data".
func WaitDistribution(path, title string, series []WaitSeries) error {
	p := newPlot(title)
	p.X.Label.Text = "wait from asking to grant (ms, log scale)\ntimed-out requests count at their timeout"
	p.Y.Label.Text = "share of requests granted within x"
	leg := newLegend()

	lo, hi := math.Inf(1), math.Inf(-1)
	clamped := false
	type curve struct {
		s      WaitSeries
		xs, ys []float64
	}
	var curves []curve
	for _, s := range series {
		xs, ys := ecdf(s.Waits)
		if len(xs) == 0 {
			continue
		}
		for i, x := range xs {
			if x < waitFloorMS {
				xs[i] = waitFloorMS
				clamped = true
			}
		}
		lo, hi = math.Min(lo, xs[0]), math.Max(hi, xs[len(xs)-1])
		curves = append(curves, curve{s, xs, ys})
	}
	if len(curves) == 0 {
		return save(noData(p), nil, path)
	}
	if clamped {
		p.X.Label.Text += fmt.Sprintf("\nwaits under %g ms drawn at %g ms", waitFloorMS, waitFloorMS)
	}

	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = gridColor
	p.Add(grid)
	for _, c := range curves {
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
		l.LineStyle = draw.LineStyle{Color: colorOf(c.s.Slot), Width: vg.Points(2), Dashes: dashesOf(c.s.Slot)}
		p.Add(l)
		leg.Add(cdfLabel(c.s.Label, len(c.s.Waits), c.s.TimedOut), l)
	}
	logAxis(&p.X, lo, hi)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(shareTicks())
	return save(p, leg, path)
}

// cdfLabel is a CDF's legend entry: the label, its count and its
// timeouts.
func cdfLabel(label string, n, timedOut int) string {
	if timedOut > 0 {
		return fmt.Sprintf("%s (%d, %d timed out)", label, n, timedOut)
	}
	return fmt.Sprintf("%s (%d)", label, n)
}
