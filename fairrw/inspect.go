package fairrw

import (
	"time"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wire"
)

// Policies Inspect reports in LockInfo.Policy besides those of Policy.String.
const (
	// policyMutex is the Policy of a name held as a Mutex.
	policyMutex = hidden.PolicyMutex
	// policyFair is the Policy of a name held only by reads under a fair policy,
	// once the record of which one has expired. Either may take it.
	policyFair = hidden.PolicyFair
)

// LockInfo is what Redis keeps of one lock at one instant, as Inspect read
// it.
type LockInfo struct {
	// Name is the lock name.
	Name string
	// Policy is the format of the keys found, or "" if none: a Policy's String
	// ("writer-preferring", "phase-fair", "redisson"), "redisson-mutex" for a
	// name held as a Mutex, or "fair" for a name held only by reads under a
	// fair policy once the record of which one has expired (either fair
	// policy may take it). It may be set while nobody holds or waits.
	Policy string
	// Time is the server's clock when the lock was read; Remaining counts from it.
	Time time.Time
	// Holders are the live holds, the write first, each owner once per mode.
	Holders []HolderInfo
	// WaitingWriters are the queued writers, first served first (fair policies).
	WaitingWriters []WaiterInfo
	// WaitingReaders are the readers PhaseFair recorded as waiting or admitted.
	WaitingReaders []WaiterInfo
	// Token is the current write's fencing token as Redis granted it, else
	// the last one handed out (or the top of a range left open) while Redis
	// keeps it, or 0. A Lease its Client passed on in a cohort (WithCohorts)
	// carries one up to 63 above it. Under Redisson's formats a token is
	// kept for a second.
	Token uint64
}

// HolderInfo is one owner's live hold of a lock in one mode.
type HolderInfo struct {
	// Owner is the holding owner, as Lease.Owner.
	Owner string
	// Mode is Write or Read (a Mutex's holds are Write).
	Mode Mode
	// Holds counts the owner's holds in Mode; 0 under WriterPreferring and
	// PhaseFair, which do not count them.
	Holds int
	// Remaining is how long Redis keeps the hold from Time unless it is renewed
	// (negative: no expiry).
	Remaining time.Duration
}

// WaiterInfo is one waiter of a lock, as its policy records it.
type WaiterInfo struct {
	// Owner is the waiting owner, as HolderInfo.Owner.
	Owner string
	// Remaining is how long its entry lives from LockInfo.Time unless refreshed.
	Remaining time.Duration
	// Lease is the lease a waiting writer asked for (0 for readers).
	Lease time.Duration
	// Admitted marks a reader PhaseFair let in ahead of the next writer.
	Admitted bool
}

// inspectScript reads a lock under every format at once (lua/inspect.lua).
// It writes nothing, so it is safe to retry.
var inspectScript = script.New("inspect", true)

// validateInspectName checks name as every policy does, for every key
// Inspect reads: they must share the name's slot.
func validateInspectName(name string) error {
	req := wire.Inspect{Name: name, Keys: wire.Fair(name), LeaseKeys: []string{compat.LeaseKey(name, "x", 1)}}
	keys, _ := req.Render()
	return validateName(name, keys...)
}
