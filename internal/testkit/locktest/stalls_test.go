package locktest

import (
	"strings"
	"testing"
	"time"
)

// TestRetriedOnlyThroughStalls: a case that failed during a stall of the
// control is run again, up to stallTries; one that failed with no stall
// fails at once, and one that failed through a stall on every try fails
// on the last.
func TestRetriedOnlyThroughStalls(t *testing.T) {
	const interval = 100 * time.Millisecond
	stalled := func(w *stallWatch) { now := time.Now(); w.note(now.Add(-interval), now) }
	for _, tc := range []struct {
		name      string
		stallTill int // tries that stall (and fail) before one passes; -1: every try fails, stalled
		stall     bool
		wantTries int
		wantFail  bool
	}{
		{"passes", 0, true, 1, false},
		{"stall then pass", 1, true, 2, false},
		{"no stall fails at once", 1, false, 1, true},
		{"stalls every try", -1, true, stallTries, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &stallWatch{}
			tries, cleaned := 0, 0
			failure := runSoft(t, func(tb testing.TB) {
				w.retried(tb, interval, func(tb testing.TB, try int) {
					tries = try
					if tc.stallTill >= 0 && try > tc.stallTill {
						return
					}
					if tc.stall {
						stalled(w)
					}
					tb.Fatalf("lease lost")
				}, func(int) { cleaned++ })
			})
			if tries != tc.wantTries || (failure != "") != tc.wantFail {
				t.Fatalf("tries %d, failure %q; want %d tries, failed %v", tries, failure, tc.wantTries, tc.wantFail)
			}
			if tc.wantFail && !strings.Contains(failure, "lease lost") {
				t.Fatalf("failure %q does not carry the case's", failure)
			}
			if want := tc.wantTries - 1; cleaned != want {
				t.Fatalf("cleaned %d failed tries, want %d", cleaned, want)
			}
		})
	}
}

// TestStallWatchWorst: worst reads only the stalls that overlap the span
// asked about, and keeps none shorter than stallMin.
func TestStallWatchWorst(t *testing.T) {
	w := &stallWatch{}
	t0 := time.Now()
	w.note(t0, t0.Add(stallMin/2))
	w.note(t0.Add(time.Second), t0.Add(time.Second+300*time.Millisecond))
	if got := w.worst(t0, t0.Add(500*time.Millisecond)); got != 0 {
		t.Fatalf("worst over the first half second: %v, want 0 (a short gap is no stall)", got)
	}
	if got := w.worst(t0.Add(1200*time.Millisecond), t0.Add(2*time.Second)); got != 300*time.Millisecond {
		t.Fatalf("worst over a span the stall overlaps: %v, want 300ms", got)
	}
}
