package fairrw

import (
	"testing"
	"time"
)

// TestSplitPauseOutgrowsTheRound: the pause after split rounds doubles
// from splitBackoff, and its cap is maxSplitBackoff or four rounds,
// whichever is longer: waiters whose rounds take longer than the fixed
// cap must still be able to draw pauses a round apart.
func TestSplitPauseOutgrowsTheRound(t *testing.T) {
	for _, tc := range []struct {
		splits int
		took   time.Duration
		want   time.Duration
	}{
		{1, time.Millisecond, 10 * time.Millisecond},
		{3, time.Millisecond, 40 * time.Millisecond},
		{16, time.Millisecond, maxSplitBackoff},               // fast rounds: the fixed cap
		{16, 20 * time.Millisecond, maxSplitBackoff},          // 4 rounds under it
		{16, 300 * time.Millisecond, 1200 * time.Millisecond}, // slow rounds: four of them
		{2, 300 * time.Millisecond, 20 * time.Millisecond},    // still doubling up to there
	} {
		if got := splitPauseLimit(tc.splits, tc.took); got != tc.want {
			t.Errorf("splitPauseLimit(%d, %v) = %v, want %v", tc.splits, tc.took, got, tc.want)
		}
	}
}
