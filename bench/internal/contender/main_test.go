package contender_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a rueidis or go-redis connection,
// a fairrw renewer, a rueidislock monitor, a waiter) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
