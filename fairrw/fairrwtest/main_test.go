package fairrwtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every Client and Server a test makes is closed by its cleanups: none of
// their goroutines may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
