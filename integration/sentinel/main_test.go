// Package sentinel tests fairrw behind Redis Sentinel: the behavioural suite,
// failovers, a killed primary and the waiters woken after a failover.
package sentinel

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
