package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// save draws p, with leg (if it has entries) in a strip on its
// right, at canvasWidth x canvasHeight, and writes it to path in the format
// of path's extension. A panic of gonum/plot becomes an error.
func save(p *plot.Plot, leg *plot.Legend, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %s: drawing failed: %v", path, r)
		}
	}()
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var c vg.CanvasWriterTo
	switch format {
	case "svg":
		c = vgsvg.New(canvasWidth, canvasHeight)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(canvasWidth, canvasHeight), vgimg.UseDPI(rasterDPI))}
	case "":
		return fmt.Errorf("chart %s: no extension to tell the format (want .svg or .png)", path)
	default:
		if c, err = draw.NewFormattedCanvas(canvasWidth, canvasHeight, format); err != nil {
			return fmt.Errorf("chart %s: %w", path, err)
		}
	}
	dc := draw.New(c)
	// Leave a margin around the chart.
	dc = draw.Crop(dc, vg.Points(6), -vg.Points(10), vg.Points(6), -vg.Points(8))
	layout(p, leg, dc)
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
	return writeFile(path, bytes.NewReader(out))
}

// layout draws p on dc: its title centered over the whole chart, leg
// (if it has entries) in a strip on the right below the title, and p's
// axis labels centered on its data area. (gonum/plot places the box of
// an axis label at the axis' arithmetic middle, which on a log axis is
// near its end, and then shrinks the data area to make room for it.)
func layout(p *plot.Plot, leg *plot.Legend, dc draw.Canvas) {
	title, xl, yl := p.Title.Text, p.X.Label.Text, p.Y.Label.Text
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "", "", ""
	defer func() { p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xl, yl }()

	if title != "" {
		sty := p.Title.TextStyle
		title = wrap(sty, title, 0.95*(dc.Max.X-dc.Min.X))
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y + sty.FontExtents().Descent}, title)
		dc.Max.Y -= sty.Rectangle(title).Size().Y + p.Title.Padding
	}
	pc := dc
	if leg != nil && leg.Rectangle(dc).Size().X > 0 {
		w := legendWidth(leg)
		pc.Max.X -= w
		strip := dc
		strip.Min.X = dc.Max.X - w + vg.Points(12)
		leg.Draw(strip)
	}
	// The labels are centered on the data area, which is narrower than
	// pc by the width of the ticks' labels.
	xl = wrap(p.X.Label.TextStyle, xl, 0.85*(pc.Max.X-pc.Min.X))
	yl = wrap(p.Y.Label.TextStyle, yl, 0.8*(pc.Max.Y-pc.Min.Y))
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

// wrap breaks each line of s at spaces so that no line is wider than
// w in sty; a word wider than w stays whole on its line.
func wrap(sty text.Style, s string, w vg.Length) string {
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

// legendWidth is the width of the strip leg needs, at most 40% of the
// chart. It leaves a fifth more for the text, for an SVG viewer that has
// to use a wider font than Liberation Sans.
func legendWidth(leg *plot.Legend) vg.Length {
	w := leg.Rectangle(draw.Canvas{}).Size().X
	w += (w-leg.ThumbnailWidth)/5 + vg.Points(16)
	return min(w, 0.4*canvasWidth)
}

// writeFile writes r to path through a temporary file in the same
// directory, so that a failed write leaves no half chart.
func writeFile(path string, r io.Reader) error {
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
