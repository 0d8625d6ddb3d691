package itest

import (
	"github.com/fairrw/rwlock/internal/locktest"
)

var Policies = locktest.Policies()
