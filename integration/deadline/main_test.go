// Package deadline tests that every call returns by its ctx's deadline
// whatever Redis does (down, frozen, unreachable), judged against a control
// of the machine's lateness.
package deadline

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
