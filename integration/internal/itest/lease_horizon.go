package itest

import (
	"testing"

	"github.com/fairrw/rwlock/fairrw"
)

// forEachFair runs body as a subtest per fair policy, with the policy's
// name as its scripts take it.
func ForEachFair(t *testing.T, body func(t *testing.T, p fairrw.Policy, code string)) {
	for _, p := range FairPolicies {
		t.Run(p.String(), func(t *testing.T) { body(t, p, p.String()) })
	}
}
