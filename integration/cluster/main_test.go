// Package cluster tests fairrw on a Redis Cluster: the behavioural suite,
// renewal rounds, names across slots, failover, migration and a killed
// primary.
package cluster

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
