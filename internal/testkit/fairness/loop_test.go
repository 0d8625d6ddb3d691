package fairness

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestLoop runs a short closed loop on miniredis: every recorded request
// was asked within the window, every grant went through the hook with the
// hold seen exclusive for the writer, and requests of both classes were
// recorded under their workers' indexes.
func TestLoop(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithPolicy(fairrw.PhaseFair()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var workers []*Worker
	for i := range 3 {
		workers = append(workers, &Worker{Class: Reader, Index: i, Mutex: RW(c.RWMutex("loop")), Hold: 5 * time.Millisecond, Think: UniformThink(0, time.Millisecond)})
	}
	workers = append(workers, &Worker{Class: Writer, Index: 0, Mutex: RW(c.RWMutex("loop")), Hold: 2 * time.Millisecond, Think: PeriodThink(20 * time.Millisecond)})

	var active, grants, overlaps atomic.Int64
	const window = 300 * time.Millisecond
	lp := &Loop{Window: window, Rec: new(Recorder), OnGrant: func(_ *Worker, class Class, _ Hold) func() {
		grants.Add(1)
		delta := int64(1)
		if class == Writer {
			delta = 1000
		}
		if n := active.Add(delta); (class == Writer && n != 1000) || (class == Reader && n >= 1000) {
			overlaps.Add(1)
		}
		return func() { active.Add(-delta) }
	}}
	start, err := lp.Run(context.Background(), workers)
	if err != nil {
		t.Fatal(err)
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d holds overlapped a write", overlaps.Load())
	}
	readers, writers := lp.Rec.Requests(Reader), lp.Rec.Requests(Writer)
	if len(readers) == 0 || len(writers) == 0 {
		t.Fatalf("recorded %d reader and %d writer requests, want some of each", len(readers), len(writers))
	}
	// A request still waiting at the window is recorded as timed out (a
	// loaded machine's miniredis can keep one that long): the hook sees
	// the granted ones.
	granted := int64(0)
	for _, q := range append(readers, writers...) {
		if !q.TimedOut {
			granted++
		}
	}
	if grants.Load() < granted {
		t.Fatalf("%d grants went through the hook, fewer than the %d recorded as granted", grants.Load(), granted)
	}
	for _, q := range append(readers, writers...) {
		if q.Asked.Sub(start) >= window || q.Asked.Before(start) {
			t.Fatalf("request asked at %v, outside the window [0, %v)", q.Asked.Sub(start), window)
		}
		if q.Client < 0 || (q.Class == Writer && q.Client != 0) || q.Client > 2 {
			t.Fatalf("request under worker index %d", q.Client)
		}
	}
}

func TestThinkRules(t *testing.T) {
	p := PeriodThink(200 * time.Millisecond)
	for since, want := range map[time.Duration]time.Duration{
		0:                      200 * time.Millisecond,
		50 * time.Millisecond:  150 * time.Millisecond,
		200 * time.Millisecond: 200 * time.Millisecond, // just arrived on a tick: the next one
		390 * time.Millisecond: 10 * time.Millisecond,
	} {
		if got := p(since); got != want {
			t.Errorf("PeriodThink(200ms)(%v) = %v, want %v", since, got, want)
		}
	}
	u := UniformThink(3*time.Millisecond, 5*time.Millisecond)
	for range 100 {
		if d := u(0); d < 3*time.Millisecond || d > 5*time.Millisecond {
			t.Fatalf("UniformThink(3ms, 5ms) drew %v", d)
		}
	}
}

// TestLoopMixed: a mixed worker asks for reads and writes in about its
// ReadShare, each recorded under the class it asked for.
func TestLoopMixed(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// At least 40 requests: a 300 ms window makes about twice that on an
	// idle machine; on a loaded one, the window is made longer.
	var holds [2]atomic.Int64 // by class: reads, writes seen by the hook
	var lp *Loop
	var reads, writes int
	for _, window := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
		holds[0].Store(0)
		holds[1].Store(0)
		w := &Worker{Class: Reader, Index: 0, Mutex: RW(c.RWMutex("mixed")), ReadShare: 0.75}
		lp = &Loop{Window: window, Rec: new(Recorder), OnGrant: func(_ *Worker, class Class, h Hold) func() {
			if got := hidden.Mode(h.(*fairrw.Lease)); got != class.Mode() {
				t.Errorf("asked for a %s, granted a %v hold", class, got)
			}
			holds[class-1].Add(1)
			return func() {}
		}}
		if _, err := lp.Run(context.Background(), []*Worker{w}); err != nil {
			t.Fatal(err)
		}
		reads, writes = len(lp.Rec.Requests(Reader)), len(lp.Rec.Requests(Writer))
		if reads+writes >= 40 {
			break
		}
		t.Logf("%d requests in %v: a longer window", reads+writes, window)
	}
	if reads+writes < 40 {
		t.Fatalf("only %d requests recorded in a window of %v", reads+writes, lp.Window)
	}
	// 75% reads: with n >= 40 draws, a share outside [0.5, 0.95] has
	// probability below 1e-4.
	if share := float64(reads) / float64(reads+writes); share < 0.5 || share > 0.95 {
		t.Fatalf("%d reads and %d writes: read share %.2f, want about 0.75", reads, writes, share)
	}
	if holds[0].Load() < int64(reads) || holds[1].Load() < int64(writes) {
		t.Fatalf("hook saw %d reads, %d writes; fewer than recorded (%d, %d)", holds[0].Load(), holds[1].Load(), reads, writes)
	}
}
