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
			var stalledAt []time.Time // the control's stalls, each ending then, interval long
			w := stallOf(func(from, to time.Time) time.Duration {
				for _, at := range stalledAt {
					if !at.Before(from) && !at.Add(-interval).After(to) {
						return interval
					}
				}
				return 0
			})
			tries, cleaned := 0, 0
			failure := runSoft(t, func(tb testing.TB) {
				w.retried(tb, interval, func(tb testing.TB, try int) {
					tries = try
					if tc.stallTill >= 0 && try > tc.stallTill {
						return
					}
					if tc.stall {
						stalledAt = append(stalledAt, time.Now())
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
