package acl

import (
	"slices"
	"strings"
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/acldoc"
)

// aclStandalone are docs/acl.md's blocks that make a user from scratch:
// each starts with "reset". Every other block only adds to a user.
var aclStandalone = []string{"tenant", "inspector", "operator", "admin", "default", "sentinel"}

// TestACLBlocksCompose: docs/acl.md's blocks compose. Only the blocks that
// make a user from scratch reset it, in their first line and nowhere else,
// and that line also resets the channels (a "reset" grants every channel
// where acl-pubsub-default is allchannels), unless it grants them all;
// every other block only adds
// commands, key patterns and channel patterns to the user "billing", so
// that running the blocks of several policies, in any order, gives the
// union of their rights: no block undoes another. (Before, every policy's
// block began by resetting the user, so a tenant given the blocks of two
// policies kept the last one's rights only.) The blocks the tests build
// users from are all there.
func TestACLBlocksCompose(t *testing.T) {
	blocks, order, err := acldoc.Blocks(itest.AclDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range append(append([]string{}, aclStandalone...), "writer-preferring", "phase-fair", "redisson", "mutex", "tracking", "cluster", "sentinel-data") {
		if _, ok := blocks[role]; !ok {
			t.Errorf("%s: no block ```acl %s", itest.AclDoc, role)
		}
	}
	for _, role := range order {
		standalone := slices.Contains(aclStandalone, role)
		for i, line := range blocks[role] {
			f := strings.Fields(line)
			if len(f) < 4 || f[0] != "ACL" || f[1] != "SETUSER" {
				t.Errorf("%s %q: %q is not an ACL SETUSER line with rules", itest.AclDoc, role, line)
				continue
			}
			if !standalone && f[2] != acldoc.Namespace {
				t.Errorf("%s %q: %q adds to the user %q, want the tenant's user %q", itest.AclDoc, role, line, f[2], acldoc.Namespace)
			}
			for j, rule := range f[3:] {
				first := standalone && i == 0
				switch {
				case first && j == 0:
					if rule != "reset" {
						t.Errorf("%s %q: the first line starts with %q, want reset", itest.AclDoc, role, rule)
					}
				case first && (rule == "on" || rule == "off" || rule == "resetchannels" || strings.HasPrefix(rule, ">")):
				case strings.HasPrefix(rule, "+"), strings.HasPrefix(rule, "~"), strings.HasPrefix(rule, "&"), strings.HasPrefix(rule, "%R~"):
				default:
					t.Errorf("%s %q: line %d: the rule %q does not add to the user", itest.AclDoc, role, i+1, rule)
				}
			}
			if standalone && i == 0 && !slices.Contains(f[3:], "resetchannels") && !slices.Contains(f[3:], "&*") {
				t.Errorf("%s %q: the first line does not resetchannels: %q", itest.AclDoc, role, line)
			}
		}
	}
}
