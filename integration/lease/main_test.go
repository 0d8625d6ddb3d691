// Package lease tests leases: each hold's own lease (no hold shortens
// another), the Context of a lease, late renewals, the promises of a grant,
// synchronous replication and the renewal horizon.
package lease

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
