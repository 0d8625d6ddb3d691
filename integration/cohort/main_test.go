// Package cohort tests the cohorts (holds passed within a Client without
// Redis): their lease semantics, yielding to other Clients, run lengths, and
// races with unlock, restart, Close and cancellation.
package cohort

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
