package fairness

import (
	"math/rand/v2"
	"testing"
	"time"
)

// req is a request asked at asked ms and granted at granted ms after t0;
// granted < 0 means it timed out.
func req(asked, granted int) Request {
	t0 := time.Unix(1000, 0)
	if granted < 0 {
		return Request{Class: Writer, Asked: t0.Add(ms(asked)), Wait: time.Second, TimedOut: true}
	}
	return Request{Class: Writer, Asked: t0.Add(ms(asked)), Wait: ms(granted - asked)}
}

func TestOvertakes(t *testing.T) {
	tests := []struct {
		name string
		reqs []Request
		want int
	}{
		{"none", nil, 0},
		{"one", []Request{req(0, 5)}, 0},
		// FIFO: asked 0,1,2 granted 10,20,30 in the same order.
		{"fifo", []Request{req(0, 10), req(1, 20), req(2, 30)}, 0},
		// B (asked 1) granted 10 before A (asked 0, granted 20): 1.
		{"one overtake", []Request{req(0, 20), req(1, 10)}, 1},
		// granted in reverse order of asking, n=3: pairs (A,B),(A,C),(B,C)
		// all inverted: 3 = n(n-1)/2.
		{"reverse of 3", []Request{req(0, 30), req(1, 20), req(2, 10)}, 3},
		// A asked 0 granted 40; B 1->10; C 2->20; D 3->50.
		// Overtaking A: B (10<40), C (20<40): 2. Overtaking B: none asked
		// after and granted before 10. Overtaking C: none. D: none. Total 2.
		{"two overtake the first", []Request{req(0, 40), req(1, 10), req(2, 20), req(3, 50)}, 2},
		// equal asked times are not overtakes: both asked at 0.
		{"tie asked", []Request{req(0, 20), req(0, 10)}, 0},
		// equal grant times are not overtakes.
		{"tie granted", []Request{req(0, 10), req(1, 10)}, 0},
		// A asked 0 timed out; B 1->10 and C 2->20 were granted: each
		// overtakes A: 2. B vs C in order: 0. Total 2.
		{"timeout is overtaken", []Request{req(0, -1), req(1, 10), req(2, 20)}, 2},
		// two timeouts never overtake each other; B asked 0 granted 5
		// before both, but was asked before both: 0.
		{"timeouts do not overtake", []Request{req(0, 5), req(1, -1), req(2, -1)}, 0},
		// A asked 5 timed out, B asked 0 granted 50: B was asked before A,
		// so it did not overtake A; A never granted, overtakes nobody: 0.
		{"earlier grant after a timeout", []Request{req(5, -1), req(0, 50)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overtakes(tt.reqs); got != tt.want {
				t.Errorf("Overtakes = %d, want %d", got, tt.want)
			}
			if got := overtakesNaive(tt.reqs); got != tt.want {
				t.Errorf("overtakesNaive = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestOvertakesMatchesNaive checks the O(n log n) count against the
// definition on random requests with ties and timeouts.
func TestOvertakesMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := r.IntN(40)
		reqs := make([]Request, n)
		for i := range reqs {
			asked := r.IntN(20)
			granted := asked + r.IntN(20)
			if r.IntN(8) == 0 {
				granted = -1
			}
			reqs[i] = req(asked, granted)
		}
		if got, want := Overtakes(reqs), overtakesNaive(reqs); got != want {
			t.Fatalf("Overtakes = %d, naive %d, for %v", got, want, reqs)
		}
	}
}
