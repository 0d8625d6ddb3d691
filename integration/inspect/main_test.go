// Package inspect tests Inspect on real Redis servers: what it reports for
// every policy and state, and that it changes nothing.
package inspect

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
