package chart

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// unitLabel is a value axis' label: unit, with scale inside its
// parentheses ("ms (log scale)", "handoff p50 (ms, log scale)"), then note
// on a line of its own.
func unitLabel(unit, scale, note string) string {
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

// valueLabel writes v with three significant digits, without exponent
// or trailing zeros: 0.0834, 0.08, 55, 150, 12346.
func valueLabel(v float64) string {
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

// nominalTicks labels category i (the first on top) with names[i].
func nominalTicks(names []string) []plot.Tick {
	ticks := make([]plot.Tick, len(names))
	for i, name := range names {
		ticks[i] = plot.Tick{Value: float64(len(names) - 1 - i), Label: name}
	}
	return ticks
}

// shareTicks are the ticks of a 0..1 axis.
func shareTicks() []plot.Tick {
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

// logAxis makes a a log axis from the power of ten at or below lo to
// the one above hi (lo and hi > 0), so that the greatest value is not
// drawn on the axis' edge, labelled at every power of ten.
func logAxis(a *plot.Axis, lo, hi float64) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = decadeTicks{}
	a.Min = math.Pow10(int(math.Floor(math.Log10(lo) + 1e-9)))
	a.Max = math.Pow10(int(math.Floor(math.Log10(hi)+1e-9)) + 1)
	if a.Max <= a.Min {
		a.Max = a.Min * 10
	}
}

// decadeTicks marks a log axis: a labelled tick at every power of ten and
// unlabelled ones at 2..9 times it (labelled at 2 and 5 on a short axis). (plot.LogTicks rounds log10(0.1) to 0
// and so leaves out the decade below 1 when the axis starts at 0.1.)
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
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
				t.Label = decadeLabel(e)
			case few && (m == 2 || m == 5):
				t.Label = valueLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// decadeLabel writes 10^e plainly (0.01, 1, 1000) between 10^-4 and 10^6.
func decadeLabel(e int) string {
	if e < -4 || e > 6 {
		return "1e" + strconv.Itoa(e)
	}
	return strconv.FormatFloat(math.Pow10(e), 'f', -1, 64)
}
