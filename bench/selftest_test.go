package bench

import "testing"

func TestWakePathsString(t *testing.T) {
	w := wakePaths{"pubsub": 3, "": 1, "timer": 2}
	if got, want := w.String(), `""=1 pubsub=3 timer=2`; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
