package chart

import (
	"image/color"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/plot"
)

func TestValueLabel(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.08: "0.08", 0.0834: "0.0834", 0.1: "0.1", 1: "1", 55: "55", 55.55: "55.5", 150: "150",
		12345.6: "12346", -3.25: "-3.25", 1e-12: "0",
	} {
		if got := valueLabel(v); got != want {
			t.Errorf("valueLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestUnitLabel(t *testing.T) {
	for _, tc := range [][4]string{
		{"ms", "", "", "ms"},
		{"ms", "log scale", "", "ms (log scale)"},
		{"handoff p50 (ms)", "log scale", "", "handoff p50 (ms, log scale)"},
		{"", "log scale", "", "log scale"},
		{"ms", "log scale", "values <= 0 drawn at 10", "ms (log scale)\nvalues <= 0 drawn at 10"},
		{"", "", "note", "note"},
	} {
		if got := unitLabel(tc[0], tc[1], tc[2]); got != tc[3] {
			t.Errorf("unitLabel(%q, %q, %q) = %q, want %q", tc[0], tc[1], tc[2], got, tc[3])
		}
	}
}

func TestLogAxis(t *testing.T) {
	for _, tc := range [][4]float64{
		// lo, hi, then the axis' min and max
		{0.05, 5000, 0.01, 10000},
		{0.01, 25, 0.01, 100},
		{10, 10, 10, 100},
		{0.1, 100, 0.1, 1000},
		{0.08, 150, 0.01, 1000},
	} {
		var p plot.Plot
		logAxis(&p.X, tc[0], tc[1])
		if math.Abs(p.X.Min/tc[2]-1) > 1e-12 || math.Abs(p.X.Max/tc[3]-1) > 1e-12 {
			t.Errorf("logAxis(%v, %v): %v..%v, want %v..%v", tc[0], tc[1], p.X.Min, p.X.Max, tc[2], tc[3])
		}
	}
}

func TestDecadeTicks(t *testing.T) {
	var labels []string
	for _, tk := range (decadeTicks{}).Ticks(0.1, 1000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0.1", "1", "10", "100", "1000"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	labels = nil
	for _, tk := range (decadeTicks{}).Ticks(10, 1000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"10", "20", "50", "100", "200", "500", "1000"}; !slices.Equal(labels, want) {
		t.Errorf("labels of a short axis %q, want %q", labels, want)
	}
	for _, r := range [][2]float64{{0, 1}, {1, 1}, {-1, 10}, {1, math.Inf(1)}, {math.NaN(), 1}} {
		if ticks := (decadeTicks{}).Ticks(r[0], r[1]); ticks != nil {
			t.Errorf("Ticks(%v, %v) = %v", r[0], r[1], ticks)
		}
	}
}

// TestPaletteDistinct checks that every slot of the palette has its own
// colour, and that slots past its end or negative wrap around it.
func TestPaletteDistinct(t *testing.T) {
	seen := map[color.Color]int{}
	for slot := range palette {
		c := colorOf(slot)
		if prev, ok := seen[c]; ok {
			t.Errorf("slots %d and %d share colour %v", prev, slot, c)
		}
		seen[c] = slot
	}
	for _, slot := range []int{len(palette), -1, 3 * len(palette)} {
		if got, want := colorOf(slot), palette[wrapSlot(slot, len(palette))]; got != want {
			t.Errorf("colorOf(%d) = %v, want %v", slot, got, want)
		}
		_ = glyphOf(slot) // no panic
		_ = dashesOf(slot)
	}
	if wrapSlot(-1, 8) != 7 || wrapSlot(9, 8) != 1 {
		t.Errorf("wrapSlot(-1, 8) = %d, wrapSlot(9, 8) = %d", wrapSlot(-1, 8), wrapSlot(9, 8))
	}
}
