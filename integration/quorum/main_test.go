// Package quorum tests the Quorum (a lock on several independent Redis
// servers): exclusion across processes, handoff, histories with a node
// killed, late grants, nodes down or paused.
package quorum

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
