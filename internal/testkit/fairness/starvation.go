package fairness

import "time"

// NotGrantedWithin returns the share (0 to 1) of reqs not granted within
// bound: timed out, or granted after waiting longer than bound. With
// writers under a reader flood it is the second figure of writer starvation
// in measuring.md (the first is the writers' Summary.Max). An empty reqs
// gives 0.
func NotGrantedWithin(reqs []Request, bound time.Duration) float64 {
	if len(reqs) == 0 {
		return 0
	}
	late := 0
	for _, q := range reqs {
		if q.TimedOut || q.Wait > bound {
			late++
		}
	}
	return float64(late) / float64(len(reqs))
}

// GrantsPerSecond returns the grants of reqs that happened in
// [start, start+window), per second of window.
func GrantsPerSecond(reqs []Request, start time.Time, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	end := start.Add(window)
	n := 0
	for _, q := range reqs {
		if g, ok := q.Granted(); ok && !g.Before(start) && g.Before(end) {
			n++
		}
	}
	return float64(n) / window.Seconds()
}
