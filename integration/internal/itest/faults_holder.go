package itest

import (
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// holderLease is the lease of the holder children: short, so that the
// tests wait a few seconds at most.
const HolderLease = time.Second

type LockResult struct {
	L   *fairrw.Lease
	Err error
	At  time.Time
}
