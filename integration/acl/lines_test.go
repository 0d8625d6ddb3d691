package acl

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/acldoc"
)

// everyPolicy are the blocks of docs/acl.md a tenant adds to the tenant
// block to use every policy and the Mutex.
var everyPolicy = []string{"writer-preferring", "phase-fair", "redisson", "mutex"}

// aclLines returns the lines of the fenced block "```acl <role>" of
// docs/acl.md, so that the documented lines are exactly what the tests use.
func aclLines(t testing.TB, role string) []string {
	t.Helper()
	lines, err := acldoc.Block(itest.AclDoc, role)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// setTenantBy is setTenant through send.
func setTenantBy(t testing.TB, send func(args ...string) error, ns, user, password string, roles ...string) {
	t.Helper()
	itest.SetUserBy(t, send, ns, user, password, nil, append([]string{"tenant"}, roles...)...)
}
