// Package faults tests fairrw under faults: killed and paused holders,
// network cuts, lost replies, Redis restarts and script flushes, late copies
// of calls, retries and unlock latches.
package faults

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
