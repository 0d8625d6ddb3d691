package fairness

import (
	"sync"
	"testing"
	"time"
)

func TestRecorderConcurrent(t *testing.T) {
	var r Recorder
	t0 := time.Unix(1000, 0)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if i%10 == 0 {
					r.Timeout(Writer, c, t0, time.Second)
				} else {
					r.Grant(Reader, c, t0, t0.Add(ms(i)))
				}
			}
		})
	}
	wg.Wait()
	if got := r.Len(); got != 800 {
		t.Fatalf("Len = %d, want 800", got)
	}
	w := r.Requests(Writer)
	if len(w) != 80 { // 8 goroutines x 10 timeouts (i = 0, 10, ..., 90)
		t.Fatalf("writers = %d, want 80", len(w))
	}
	for _, q := range w {
		if !q.TimedOut || q.Wait != time.Second {
			t.Fatalf("timeout recorded as %+v", q)
		}
		if _, ok := q.Granted(); ok {
			t.Fatalf("a timed-out request reports a grant")
		}
	}
	if got := len(r.Requests(Reader)); got != 720 {
		t.Fatalf("readers = %d, want 720", got)
	}
}

func TestStarvationAndThroughput(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reqs := []Request{
		req(0, 100),   // wait 100ms, granted at 100ms
		req(0, 600),   // wait 600ms, granted at 600ms
		req(500, 900), // wait 400ms, granted at 900ms
		req(900, -1),  // timed out
		req(1900, 2100),
	}
	// bound 500ms: late are the 600ms wait and the timeout: 2/5 = 0.4
	if got := NotGrantedWithin(reqs, 500*time.Millisecond); got != 0.4 {
		t.Errorf("NotGrantedWithin = %v, want 0.4", got)
	}
	// window [t0, t0+2s): grants at 100, 600, 900 ms (2100 is outside, the
	// timeout is no grant): 3 / 2s = 1.5/s
	if got := GrantsPerSecond(reqs, t0, 2*time.Second); got != 1.5 {
		t.Errorf("GrantsPerSecond = %v, want 1.5", got)
	}
	if got := NotGrantedWithin(nil, time.Second); got != 0 {
		t.Errorf("NotGrantedWithin(nil) = %v", got)
	}
}
