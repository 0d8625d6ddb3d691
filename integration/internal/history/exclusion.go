package history

import (
	"container/heap"
	"fmt"
	"sort"

	"github.com/fairrw/rwlock/fairrw"
)

// CheckExclusion checks mutual exclusion over believed-held intervals: per
// lock name, no write hold overlaps a hold (read or write) of another owner.
// Holds of one owner may overlap: holds are reentrant, and the write owner
// may also read. Intervals are half-open, so a hold that begins as another
// ends does not overlap it; empty holds overlap nothing.
//
// It sweeps each lock's holds by start, keeping the active reads and writes
// in heaps by end: O(n log n) plus the overlaps it reports.
func CheckExclusion(holds []Hold) []Violation {
	c := collector{kind: ViolationExclusion}
	for _, lock := range byLock(holds) {
		sweepExclusion(lock, &c)
	}
	return c.result()
}

// byLock groups holds by lock name (in name order), each group sorted by
// start.
func byLock(holds []Hold) [][]Hold {
	groups := make(map[string][]Hold)
	for _, h := range holds {
		groups[h.Lock] = append(groups[h.Lock], h)
	}
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([][]Hold, len(names))
	for i, name := range names {
		g := groups[name]
		sort.SliceStable(g, func(a, b int) bool { return g[a].From.Before(g[b].From) })
		out[i] = g
	}
	return out
}

// sweepExclusion checks one lock's holds, sorted by start. Each overlapping
// pair is found when its later-starting hold is reached.
func sweepExclusion(holds []Hold, c *collector) {
	var reads, writes activeHolds
	for _, h := range holds {
		if !h.From.Before(h.To) {
			continue
		}
		reads.expire(h)
		writes.expire(h)
		conflict(h, writes, c)
		if h.Mode == fairrw.Write {
			conflict(h, reads, c)
			heap.Push(&writes, h)
		} else {
			heap.Push(&reads, h)
		}
	}
}

// conflict reports h against every active hold of another owner.
func conflict(h Hold, active activeHolds, c *collector) {
	for _, a := range active {
		if a.Owner != h.Owner {
			c.add(Violation{
				Detail: fmt.Sprintf("lock %q: %s of %s overlaps %s of %s", h.Lock, a.Mode, a.Owner, h.Mode, h.Owner),
				Holds:  []Hold{a, h},
			})
		}
	}
}

// activeHolds is a min-heap of holds by end.
type activeHolds []Hold

func (a activeHolds) Len() int           { return len(a) }
func (a activeHolds) Less(i, j int) bool { return a[i].To.Before(a[j].To) }
func (a activeHolds) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *activeHolds) Push(x any)        { *a = append(*a, x.(Hold)) }
func (a *activeHolds) Pop() any {
	old := *a
	h := old[len(old)-1]
	*a = old[:len(old)-1]
	return h
}

// expire drops the holds that ended by the time h begins.
func (a *activeHolds) expire(h Hold) {
	for a.Len() > 0 && !(*a)[0].To.After(h.From) {
		heap.Pop(a)
	}
}
