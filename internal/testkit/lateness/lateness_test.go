package lateness

import (
	"testing"
	"time"
)

// TestWorstStall: WorstStall reads the stalls of the kind asked for that
// overlap the span asked about, and none shorter than stallRecorded is
// kept.
func TestWorstStall(t *testing.T) {
	l := &Control{}
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l.stalled(Stall{From: at(0), To: at(100), Redis: "r"})
	l.stalled(Stall{From: at(300), To: at(700), Redis: "r"})
	l.stalled(Stall{From: at(0), To: at(1000)})              // a bare wait's
	l.stalled(Stall{From: at(800), To: at(810), Redis: "r"}) // under stallRecorded: not kept
	for _, tc := range []struct {
		from, to int
		redis    bool
		want     time.Duration
	}{
		{0, 200, true, 100 * time.Millisecond},
		{150, 250, true, 0},
		{200, 2000, true, 400 * time.Millisecond},
		{750, 900, true, 0},
		{150, 250, false, time.Second},
	} {
		if got := l.WorstStall(at(tc.from), at(tc.to), tc.redis); got != tc.want {
			t.Errorf("WorstStall([%dms, %dms], redis %v) = %v, want %v", tc.from, tc.to, tc.redis, got, tc.want)
		}
	}
}
