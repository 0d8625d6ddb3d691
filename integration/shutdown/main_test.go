// Package shutdown tests Shutdown and Close: bounded on a frozen Redis, cut
// short by Close, releasing every hold, with calls under way.
package shutdown

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
