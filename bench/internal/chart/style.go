package chart

import (
	"image/color"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

const (
	// canvasWidth x canvasHeight is the size of every chart.
	canvasWidth  = 8 * vg.Inch
	canvasHeight = 4.5 * vg.Inch
	// rasterDPI is the resolution of raster (.png) charts.
	rasterDPI = 150
	// waitFloorMS is the least wait a log axis shows: shorter waits (0
	// included) are drawn at it, and the axis label says so.
	waitFloorMS = 0.01
)

// Colors is how many slots have a colour of their own: give at most this
// many series slots 0 to Colors-1 and no two share a colour.
const Colors = len(palette)

// palette is Okabe and Ito's colorblind-safe palette (without its yellow,
// too light on white), two darker shades of its blue and vermillion, then
// grey.
var palette = [...]color.Color{
	color.NRGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.NRGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.NRGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.NRGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.NRGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.NRGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.NRGBA{0x00, 0x00, 0x00, 0xFF}, // black
	color.NRGBA{0x00, 0x3D, 0x60, 0xFF}, // dark blue
	color.NRGBA{0x7A, 0x36, 0x00, 0xFF}, // brown
	color.NRGBA{0x88, 0x88, 0x88, 0xFF}, // grey
}

var gridColor = color.NRGBA{0xDD, 0xDD, 0xDD, 0xFF}

// colorOf is slot's colour in the palette, which starts again past its
// end (a negative slot counts back from it).
func colorOf(slot int) color.Color { return palette[wrapSlot(slot, len(palette))] }

// wrapSlot maps slot to 0..n-1.
func wrapSlot(slot, n int) int { return (slot%n + n) % n }

// translucent returns c at 70% opacity, so that stacked glyphs show.
func translucent(c color.Color) color.Color {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = 0xB3
	return n
}

// dashesOf tells lines apart where they overlap: solid, dashed,
// dotted, dash-dotted, long-dashed, then again.
func dashesOf(i int) []vg.Length {
	switch wrapSlot(i, 5) {
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

// glyphOf is series i's glyph: filled shapes, then outlines (the cross
// is kept for timeouts).
func glyphOf(i int) draw.GlyphDrawer {
	glyphs := []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{},
		draw.RingGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PlusGlyph{},
	}
	return glyphs[wrapSlot(i, len(glyphs))]
}

func fontOf(size float64, bold bool) font.Font {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return font.From(f, vg.Points(size))
}

func textStyle(size float64, bold bool) text.Style {
	return text.Style{Color: color.Black, Font: fontOf(size, bold), Handler: plot.DefaultTextHandler}
}

// newPlot returns a plot titled title in the charts' fonts.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = fontOf(14, true)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = fontOf(11, false)
		a.Tick.Label.Font = fontOf(10, false)
	}
	p.Legend.TextStyle.Font = fontOf(10, false)
	return p
}

// newLegend returns an empty legend for the strip right of the plot.
func newLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = fontOf(10, false)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(3)
	l.ThumbnailWidth = vg.Points(24)
	return &l
}

// noData turns p into an empty chart that says "no data", keeping its
// title and axis labels.
func noData(p *plot.Plot) *plot.Plot {
	p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
	p.HideAxes()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(noDataNote{textStyle(16, false)})
	return p
}

type noDataNote struct{ style text.Style }

func (n noDataNote) Plot(c draw.Canvas, _ *plot.Plot) {
	sty := n.style
	sty.Color = color.NRGBA{0x77, 0x77, 0x77, 0xFF}
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	c.FillText(sty, c.Center(), "no data")
}
