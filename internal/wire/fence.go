package wire

import (
	"strconv"
	"time"
)

// FenceRaise is lua/fence_raise.lua's request: raise a lock's last fencing
// token to at least Token (a quorum write grant's), kept for Lease.
type FenceRaise struct {
	Name  string
	Token uint64
	// Lease is how long the token is kept (the write's lease; a lifetime,
	// not a hold time).
	Lease time.Duration
}

var (
	fenceRaiseKeys = fixed(column[FenceRaise]{"fencing token", func(r *FenceRaise) string { return Fence(r.Name) }})
	fenceRaiseArgs = fixed(
		column[FenceRaise]{"token", func(r *FenceRaise) string { return strconv.FormatUint(r.Token, 10) }},
		column[FenceRaise]{"how long to keep it", func(r *FenceRaise) string { return millis(r.Lease) }})
)

// Render returns the script's KEYS and ARGV. Its reply is
// DecodeFenceRaise's.
func (r *FenceRaise) Render() (keys, args []string) {
	return renderBoth(&fenceRaiseKeys, &fenceRaiseArgs, r)
}
