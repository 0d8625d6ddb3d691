package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a Client's renewer, janitor or
// subscription loop, a rueidis connection, a waiter) outlives the benchmarks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
