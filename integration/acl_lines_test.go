package integration

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// aclDoc is the page whose ACL lines the ACL tests run as they are.
const aclDoc = "../docs/acl.md"

// aclLines returns the lines of the fenced block "```acl <role>" of
// docs/acl.md, so that the documented lines are exactly what the tests use.
func aclLines(t testing.TB, role string) []string {
	t.Helper()
	b, err := os.ReadFile(aclDoc)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```acl "+role:
			in = true
		case in && strings.TrimSpace(line) == "```":
			if len(lines) == 0 {
				t.Fatalf("%s: the block %q is empty", aclDoc, role)
			}
			return lines
		case in:
			lines = append(lines, line)
		}
	}
	t.Fatalf("%s: no block ```acl %s", aclDoc, role)
	return nil
}

// setUser sends the documented lines of role to admin for tenant ns (the
// docs write them for "billing"), as the ACL user user ("" keeps the
// documented one) with password, skipping the lines skip says to (nil:
// none).
func setUser(t testing.TB, admin rueidis.Client, role, ns, user, password string, skip func(string) bool) {
	t.Helper()
	setUserBy(t, func(args ...string) error {
		return admin.Do(context.Background(), admin.B().Arbitrary(args...).Build()).Error()
	}, role, ns, user, password, skip)
}

// setUserBy is setUser through send, which runs one command (on each node
// of a cluster, say).
func setUserBy(t testing.TB, send func(args ...string) error, role, ns, user, password string, skip func(string) bool) {
	t.Helper()
	for _, line := range aclLines(t, role) {
		if skip != nil && skip(line) {
			continue
		}
		fields := strings.Fields(line)
		for i := range fields {
			fields[i] = strings.ReplaceAll(fields[i], "billing", ns)
		}
		if user != "" {
			fields[2] = user
		}
		for i, f := range fields {
			if f == ">PASSWORD" {
				fields[i] = ">" + password
			}
		}
		if err := send(fields...); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
}
