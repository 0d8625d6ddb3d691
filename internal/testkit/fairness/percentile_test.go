package fairness

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	// ten values 1..10 ms: rank = ceil(p/100 * 10)
	ten := []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(5), ms(6), ms(7), ms(8), ms(9), ms(10)}
	// four values: rank = ceil(p/100 * 4)
	four := []time.Duration{ms(10), ms(20), ms(30), ms(40)}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value p50", []time.Duration{ms(7)}, 50, ms(7)}, // ceil(0.5) = 1
		{"one value p99", []time.Duration{ms(7)}, 99, ms(7)}, // ceil(0.99) = 1
		{"ten p50", ten, 50, ms(5)},                          // ceil(5) = 5 -> 5ms
		{"ten p90", ten, 90, ms(9)},                          // ceil(9) = 9 -> 9ms
		{"ten p99", ten, 99, ms(10)},                         // ceil(9.9) = 10 -> 10ms
		{"ten p100", ten, 100, ms(10)},                       // rank 10
		{"ten p0 clamps to min", ten, 0, ms(1)},              // ceil(0) = 0 -> 1
		{"ten p10", ten, 10, ms(1)},                          // ceil(1) = 1
		{"ten p11", ten, 11, ms(2)},                          // ceil(1.1) = 2
		{"four p50", four, 50, ms(20)},                       // ceil(2) = 2 -> 20ms
		{"four p51", four, 51, ms(30)},                       // ceil(2.04) = 3 -> 30ms
		{"four p75", four, 75, ms(30)},                       // ceil(3) = 3
		{"four p90", four, 90, ms(40)},                       // ceil(3.6) = 4
		{"four p200 clamps to max", four, 200, ms(40)},       // ceil(8) -> 4
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %g) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	grant := func(wait int) Request { return Request{Class: Writer, Asked: t0, Wait: ms(wait)} }
	timeout := func(d int) Request { return Request{Class: Writer, Asked: t0, Wait: ms(d), TimedOut: true} }
	tests := []struct {
		name string
		reqs []Request
		want Summary
	}{
		{"none", nil, Summary{}},
		{
			// waits 3,1,2 ms sorted 1,2,3: p50 rank ceil(1.5)=2 -> 2ms;
			// p90 rank ceil(2.7)=3 -> 3ms; p99 ceil(2.97)=3 -> 3ms.
			"granted only", []Request{grant(3), grant(1), grant(2)},
			Summary{Count: 3, P50: ms(2), P90: ms(3), P99: ms(3), Max: ms(3)},
		},
		{
			// 9 grants of 1..9 ms and one timeout at 5000 ms: sorted
			// 1..9, 5000; p50 rank 5 -> 5ms; p90 rank 9 -> 9ms; p99 rank
			// ceil(9.9)=10 -> 5000ms (the timeout); max 5000ms; 1 timeout.
			"timeout counts at its timeout",
			[]Request{grant(1), grant(2), grant(3), grant(4), timeout(5000), grant(5), grant(6), grant(7), grant(8), grant(9)},
			Summary{Count: 10, P50: ms(5), P90: ms(9), P99: ms(5000), Max: ms(5000), Timeouts: 1},
		},
		{
			// all timed out at 1000 ms: nothing is dropped.
			"all timed out", []Request{timeout(1000), timeout(1000)},
			Summary{Count: 2, P50: ms(1000), P90: ms(1000), P99: ms(1000), Max: ms(1000), Timeouts: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.reqs); got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}
