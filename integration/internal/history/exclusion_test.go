package history

import (
	"testing"
	"time"
)

func TestCheckExclusion(t *testing.T) {
	tests := []struct {
		name  string
		holds []Hold
		want  int
	}{
		{"overlapping writes of two owners", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 5, 15, 2)}, 1},
		{"read and read", []Hold{hold("A", R, 0, 10, 0), hold("B", R, 5, 15, 0)}, 0},
		{"write and read of one owner", []Hold{hold("A", W, 0, 10, 1), hold("A", R, 5, 15, 1)}, 0},
		{"reentrant writes of one owner", []Hold{hold("A", W, 0, 10, 1), hold("A", W, 2, 8, 1)}, 0},
		{"write of A and read of B", []Hold{hold("B", R, 0, 10, 0), hold("A", W, 9, 15, 1)}, 1},
		{"read inside a write", []Hold{hold("A", W, 0, 100, 1), hold("B", R, 10, 20, 1)}, 1},
		{"one ends as the next begins", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 10, 20, 2)}, 0},
		{"empty hold", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 5, 5, 2)}, 0},
		{"other lock", []Hold{hold("A", W, 0, 10, 1), {Owner: "B", Lock: "M", Mode: W, From: at(5), To: at(15)}}, 0},
		{"write over two readers", []Hold{hold("B", R, 0, 10, 0), hold("C", R, 1, 10, 0), hold("A", W, 5, 6, 1)}, 2},
		{"unsorted input", []Hold{hold("B", W, 5, 15, 2), hold("A", W, 0, 10, 1)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckExclusion(tt.holds)
			if len(got) != tt.want {
				t.Fatalf("%d violations, want %d: %v", len(got), tt.want, got)
			}
			for _, v := range got {
				if v.Kind != ViolationExclusion || len(v.Holds) != 2 {
					t.Errorf("violation %v: want kind %q with the 2 holds", v, ViolationExclusion)
				}
			}
		})
	}
}

// exclusionHolds returns n holds: readers overlapping each other, and
// every tenth a writer alone.
func exclusionHolds(n int) []Hold {
	var holds []Hold
	owners := []string{"A", "B", "C", "D"}
	for i := range n {
		owner := owners[i%len(owners)]
		if i%10 == 9 { // a writer alone, then readers again
			holds = append(holds, hold(owner, W, i*10, i*10+5, uint64(i)))
			continue
		}
		length := 25 // readers overlap each other...
		if i%10 >= 7 {
			length = 5 // ...but end before the writer
		}
		holds = append(holds, hold(owner, R, i*10, i*10+length, 0))
	}
	return holds
}

// TestCheckExclusionLarge checks 100k holds (readers overlapping, writers
// alone) without comparing every pair: ten times the holds take about ten
// times as long, not a hundred. Both sizes are timed in this test, each
// the best of three runs, so that the machine's load, which a bound in
// seconds would measure (6 s with two suites side by side), cancels out.
func TestCheckExclusionLarge(t *testing.T) {
	best := func(holds []Hold) time.Duration {
		var fastest time.Duration
		for i := range 3 {
			start := time.Now()
			if v := CheckExclusion(holds); len(v) != 0 {
				t.Fatalf("%d violations, want 0; first: %v", len(v), v[0])
			}
			if d := time.Since(start); i == 0 || d < fastest {
				fastest = d
			}
		}
		return fastest
	}
	small, holds := best(exclusionHolds(10_000)), exclusionHolds(100_000)
	large := best(holds)
	ratio := float64(large) / float64(max(small, time.Microsecond))
	t.Logf("10k holds checked in %v, 100k in %v: %.1fx", small, large, ratio)
	if ratio > 40 { // every pair compared: 100x
		t.Errorf("10x the holds took %.1fx as long (10k: %v, 100k: %v): the check compares pairs", ratio, small, large)
	}
	// One writer over everything: one violation per other-owner hold, capped.
	holds = append(holds, hold("E", W, 0, 1_000_000, 1))
	v := CheckExclusion(holds)
	if len(v) != maxViolations+1 || v[maxViolations].Holds != nil {
		t.Fatalf("%d violations, want %d listed and a count of the rest", len(v), maxViolations)
	}
}
