package bench

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// holdCheck sees, in this process, every hold of one lock name between its
// grant and its Unlock call, and counts them. As in sync's HammerRWMutex, a
// read adds 1 and a write writerWeight, and any other sum at a hold's start
// means Redis granted two holds it must not grant together. It also checks
// the fencing tokens: a write's is above every write's before it, and a
// read's is not below the last write's (0 once the last token expired).
type holdCheck struct {
	holds     atomic.Int64 // grants seen
	state     atomic.Int64
	lastWrite atomic.Uint64
	overlaps  atomic.Int64
	tokens    atomic.Int64
}

const writerWeight = 1 << 32

func (h *holdCheck) enter(mode fairrw.Mode, token uint64) {
	h.holds.Add(1)
	if mode == fairrw.Write {
		if h.state.Add(writerWeight) != writerWeight {
			h.overlaps.Add(1)
		}
		if prev := h.lastWrite.Swap(token); token <= prev {
			h.tokens.Add(1)
		}
		return
	}
	if h.state.Add(1) >= writerWeight {
		h.overlaps.Add(1)
	}
	if token != 0 && token < h.lastWrite.Load() { // 0: the last token expired
		h.tokens.Add(1)
	}
}

func (h *holdCheck) exit(mode fairrw.Mode) {
	if mode == fairrw.Write {
		h.state.Add(-writerWeight)
	} else {
		h.state.Add(-1)
	}
}

// verify fails b if any hold overlapped one it excludes, or a token was out
// of order.
// onGrant is a fairness.Loop grant hook: it checks the hold from its grant
// to its end. The holds are fairrw Leases (fairness.RW).
func (h *holdCheck) onGrant(_ *fairness.Worker, class fairness.Class, hold fairness.Hold) func() {
	mode := class.Mode()
	h.enter(mode, hold.(*fairrw.Lease).Token())
	return func() { h.exit(mode) }
}

func (h *holdCheck) verify(b *testing.B) {
	b.Helper()
	if n := h.overlaps.Load(); n > 0 {
		b.Errorf("exclusion violated: %d holds started while a hold they exclude was held", n)
	}
	if n := h.tokens.Load(); n > 0 {
		b.Errorf("fencing tokens out of order in %d grants", n)
	}
}

func TestHoldCheck(t *testing.T) {
	type hold struct {
		mode  fairrw.Mode
		token uint64
	}
	w := func(token uint64) hold { return hold{fairrw.Write, token} }
	r := func(token uint64) hold { return hold{fairrw.Read, token} }
	for _, tc := range []struct {
		name             string
		held, next       []hold // held stay held while next enter one at a time
		overlaps, tokens int64
	}{
		{"reads share", []hold{r(0), r(0)}, []hold{r(0)}, 0, 0},
		{"writes in turn", nil, []hold{w(1), w(2), r(2), w(3)}, 0, 0},
		{"write over a read", []hold{r(0)}, []hold{w(1)}, 1, 0},
		{"read over a write", []hold{w(1)}, []hold{r(1)}, 1, 0},
		{"write over a write", []hold{w(1)}, []hold{w(2)}, 1, 0},
		{"write token repeated", nil, []hold{w(2), w(2)}, 0, 1},
		{"read token stale", nil, []hold{w(5), r(4)}, 0, 1},
		{"read after the last token expired", nil, []hold{w(5), r(0)}, 0, 0},
	} {
		var h holdCheck
		for _, x := range tc.held {
			h.enter(x.mode, x.token)
		}
		for _, x := range tc.next {
			h.enter(x.mode, x.token)
			h.exit(x.mode)
		}
		if h.overlaps.Load() != tc.overlaps || h.tokens.Load() != tc.tokens {
			t.Errorf("%s: overlaps %d, token faults %d; want %d, %d", tc.name, h.overlaps.Load(), h.tokens.Load(), tc.overlaps, tc.tokens)
		}
		if want := int64(len(tc.held) + len(tc.next)); h.holds.Load() != want {
			t.Errorf("%s: %d holds counted, want %d", tc.name, h.holds.Load(), want)
		}
	}
}

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		x    []int
		want float64
	}{
		{[]int{5, 5, 5, 5}, 1},
		{[]int{8, 0, 0, 0}, 0.25},
		{[]int{0, 0}, 0},
		{[]int{1, 3}, 16.0 / 20},
	} {
		if got := fairness.Jain(tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("jain(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}
