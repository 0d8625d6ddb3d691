package fairness

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/redistest"
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
	lp := &Loop{Window: window, Rec: new(Recorder), OnGrant: func(w *Worker, _ Hold) func() {
		grants.Add(1)
		delta := int64(1)
		if w.Class == Writer {
			delta = 1000
		}
		if n := active.Add(delta); (w.Class == Writer && n != 1000) || (w.Class == Reader && n >= 1000) {
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
	if recorded := int64(len(readers) + len(writers)); grants.Load() < recorded {
		t.Fatalf("%d grants went through the hook, fewer than the %d recorded", grants.Load(), recorded)
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
