// Package policy tests the policies' scripts on Redis: grants on release, the
// fair queue's state, the fast path, take-up and a checked load.
package policy

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
