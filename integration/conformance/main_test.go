// Package conformance runs random workloads against every deployment with
// faults injected, and checks each history against the lock's promises
// (exclusion, fencing, deadlines).
package conformance

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
