package itest

import (
	"github.com/fairrw/rwlock/internal/testkit/locktest"
)

var Policies = locktest.Policies()
