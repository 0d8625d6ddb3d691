package itest

import (
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// cohortPolicies are the policies cohorts apply to.
var CohortPolicies = []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()}

// noKeysLeft fails unless nothing of the lock is left in Redis (the last
// token expires a second after the last grant).
func NoKeysLeft(t *testing.T, r *redistest.Redis, name string) {
	t.Helper()
	NoKeysLeftBut(t, r, name, "")
}
