package itest

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/acldoc"
)

// aclDoc is the page whose ACL lines the ACL tests run as they are.
const AclDoc = "../../docs/acl.md"

// setUser sends to admin the documented lines of the blocks roles, in
// order, for tenant ns (the docs write them for "billing"), as the ACL
// user user ("" keeps the documented one) with password, skipping the
// lines skip says to (nil: none).
func SetUser(t testing.TB, admin rueidis.Client, ns, user, password string, skip func(string) bool, roles ...string) {
	t.Helper()
	SetUserBy(t, func(args ...string) error {
		return admin.Do(context.Background(), admin.B().Arbitrary(args...).Build()).Error()
	}, ns, user, password, skip, roles...)
}

// setTenant makes ns's tenant user (user, or ns when ""): docs/acl.md's
// tenant block, then the blocks of roles (its policies, "tracking", ...).
func SetTenant(t testing.TB, admin rueidis.Client, ns, user, password string, roles ...string) {
	t.Helper()
	SetUser(t, admin, ns, user, password, nil, append([]string{"tenant"}, roles...)...)
}

// setUserBy is setUser through send, which runs one command (on each node
// of a cluster, say).
func SetUserBy(t testing.TB, send func(args ...string) error, ns, user, password string, skip func(string) bool, roles ...string) {
	t.Helper()
	cmds, err := acldoc.Commands(AclDoc, ns, user, password, roles...)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range cmds {
		line := strings.Join(args, " ")
		if skip != nil && skip(line) {
			continue
		}
		if err := send(args...); err != nil {
			t.Fatalf("%s: %v", strings.ReplaceAll(line, password, "PASSWORD"), err)
		}
	}
}
