package fairness

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the nearest-rank p-th percentile of sorted (ascending):
// the smallest value such that at least p% of the values are less than or
// equal to it, that is sorted[ceil(p/100*n)-1]. p is clamped to (0, 100]:
// p <= 0 gives the minimum, p >= 100 the maximum. An empty slice gives 0.
//
// Nearest rank never interpolates: the result is always one of the values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// Summary is the wait distribution of one class of requests.
type Summary struct {
	Count    int           // requests, timed-out ones included
	P50      time.Duration // nearest-rank percentiles, see Percentile
	P90      time.Duration
	P99      time.Duration
	Max      time.Duration
	Timeouts int // requests never granted, counted at their timeout
}

// Summarize builds the Summary of reqs. A timed-out request takes part in
// the percentiles at its Wait (its timeout) and is counted in Timeouts: it
// is never dropped.
func Summarize(reqs []Request) Summary {
	waits := make([]time.Duration, 0, len(reqs))
	s := Summary{Count: len(reqs)}
	for _, q := range reqs {
		waits = append(waits, q.Wait)
		if q.TimedOut {
			s.Timeouts++
		}
	}
	slices.Sort(waits)
	s.P50 = Percentile(waits, 50)
	s.P90 = Percentile(waits, 90)
	s.P99 = Percentile(waits, 99)
	s.Max = Percentile(waits, 100)
	return s
}
