package fairness

import (
	"slices"
	"time"
)

// Overtakes returns the overtakes of measuring.md among reqs (pass one
// class): for each request k, the number of requests j asked strictly after
// k and granted strictly before k, summed over k. FIFO grants give 0.
//
// A timed-out request was never granted: it is treated as granted at
// infinity, so every later-asked request that was granted overtook it, and
// it overtakes nobody. Ties (equal asked or equal granted times) are not
// overtakes.
//
// Order comes from the caller's clocks (Request.Asked, one process, Go's
// monotonic time): measuring.md's server-side sequence would order requests
// as Redis saw them, which this package cannot know.
//
// It counts inversions in O(n log n): requests are visited by decreasing
// asked time, and a Fenwick tree over the ranks of grant times counts the
// requests asked later that were granted earlier.
func Overtakes(reqs []Request) int {
	n := len(reqs)
	if n < 2 {
		return 0
	}
	// Ranks of grant times, 1-based; timed-out requests share the top rank.
	times := make([]time.Time, 0, n)
	for _, q := range reqs {
		if g, ok := q.Granted(); ok {
			times = append(times, g)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	never := len(times) + 1
	rank := func(q Request) int {
		g, ok := q.Granted()
		if !ok {
			return never
		}
		i, _ := slices.BinarySearchFunc(times, g, func(a, b time.Time) int { return a.Compare(b) })
		return i + 1
	}

	order := slices.Clone(reqs)
	slices.SortFunc(order, func(a, b Request) int { return b.Asked.Compare(a.Asked) }) // latest asked first
	tree := make([]int, never+1)
	add := func(i int) {
		for ; i <= never; i += i & -i {
			tree[i]++
		}
	}
	below := func(i int) int { // entries with rank < i
		s := 0
		for i--; i > 0; i -= i & -i {
			s += tree[i]
		}
		return s
	}
	total := 0
	for i := 0; i < n; {
		// A group of equal asked times: count against strictly later ones
		// only, then add the group.
		j := i
		for j < n && order[j].Asked.Equal(order[i].Asked) {
			j++
		}
		for _, q := range order[i:j] {
			total += below(rank(q))
		}
		for _, q := range order[i:j] {
			add(rank(q))
		}
		i = j
	}
	return total
}

// overtakesNaive is Overtakes by definition, in O(n^2), for tests.
func overtakesNaive(reqs []Request) int {
	total := 0
	for _, k := range reqs {
		gk, okk := k.Granted()
		for _, j := range reqs {
			gj, okj := j.Granted()
			if !okj || !j.Asked.After(k.Asked) {
				continue
			}
			if !okk || gj.Before(gk) {
				total++
			}
		}
	}
	return total
}
