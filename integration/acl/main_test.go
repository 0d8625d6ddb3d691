// Package acl tests fairrw under Redis ACLs: tenants confined to their
// namespace, refusals, the documented ACL lines, on a single server, a
// cluster and Sentinel.
package acl

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
