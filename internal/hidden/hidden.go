// Package hidden holds what fairrw does not export but the repository's own
// tests, benchmarks and integration tests read: fairrw's constants (defined
// here, and used by fairrw from here), and accessors that fairrw installs
// when it is initialized. A user needs none of it.
//
// The accessors take and return any, since this package cannot import
// fairrw: pass them a *fairrw.Lease, *fairrw.Client or *fairrw.Quorum, and
// assert an option to fairrw.Option. Any program that holds such a value has
// imported fairrw, so the accessors are installed.
package hidden

import (
	"errors"
	"time"
)

const (
	// LeaseMargin is how much longer Redis keeps every hold than its Lease's
	// Deadline (documented on Lease.Deadline).
	LeaseMargin = 5 * time.Millisecond
	// LeaseTime is the default watchdog lease, as Redisson's
	// lockWatchdogTimeout (documented on fairrw.WithLeaseTime).
	LeaseTime = 30 * time.Second
	// UnlockTimeout is the default of fairrw.WithUnlockTimeout.
	UnlockTimeout = 5 * time.Second
	// CleanupGrace is how long a call whose ctx has ended still waits for
	// the clean-up it leaves (a release sent as its ctx ended) before
	// returning and leaving it to the background.
	CleanupGrace = 20 * time.Millisecond
	// ClockDrift is the default clock-drift allowance of a Quorum, as a
	// fraction of the lease (Redlock's 1%; documented on
	// fairrw.WithClockDrift).
	ClockDrift = 0.01
	// MaxNameLength is the longest lock name accepted, in bytes
	// (documented on fairrw.ErrInvalidName).
	MaxNameLength = 4096
	// PolicyMutex is LockInfo.Policy of a name held as a Mutex.
	PolicyMutex = "redisson-mutex"
	// PolicyFair is LockInfo.Policy of a name held only by reads under a
	// fair policy, once the record of which one has expired.
	PolicyFair = "fair"
)

// Accessors, installed by fairrw's init.
var (
	// WokenBy names what ended a *fairrw.Lease's acquire wait: "pubsub",
	// "invalidation", "timer", "grant", "reply", "resubscribe", "handover",
	// or "" when it did not wait (traced as fairrw.acquire.woken_by).
	WokenBy func(lease any) string
	// ClientID returns a *fairrw.Client's UUID, the first half of every owner
	// identity it hands out.
	ClientID func(client any) string
	// Majority returns how many nodes a *fairrw.Quorum's grant needs.
	Majority func(quorum any) int
	// QuorumNodes returns how many nodes a *fairrw.Quorum spans.
	QuorumNodes func(quorum any) int
	// LeaseNodes returns how many nodes hold a quorum *fairrw.Lease now, or 1
	// for a lease on one Redis.
	LeaseNodes func(lease any) int
	// WithPublish returns a fairrw.Option that makes releases publish, and
	// waiters subscribe, with "publish" or "spublish" ("" as Java Redisson:
	// SPUBLISH on a Redis 7+ cluster, PUBLISH otherwise).
	WithPublish func(command string) any
	// WithProtocol returns a fairrw.Option that makes a fair policy speak
	// protocol v (internal/wire.Protocol's history: 1 records the bare
	// policy), to check that Clients of two protocols never share a lock.
	WithProtocol func(v int) any
	// WithClientTracking returns a fairrw.Option that turns the
	// client-tracking wake-up path off (or on where the connection supports
	// it, the default).
	WithClientTracking func(on bool) any
	// WithSlowAnswer returns a fairrw.Option that sets how long a Redis
	// call must go unanswered, when its ctx ends, to count as Redis
	// unreachable (100 ms by default): tests whose server runs in-process on
	// a loaded machine, and that do not check that threshold, raise it.
	WithSlowAnswer func(d time.Duration) any
	// WithCleanupGrace returns a fairrw.Option that sets how long a call
	// whose ctx has ended still waits for the clean-up it leaves
	// (CleanupGrace by default): a test on a machine too loaded for any
	// answer to come within the default raises it.
	WithCleanupGrace func(d time.Duration) any
)

// Accessors of the lock name and mode, installed by fairrw's init.
var (
	// Name returns the lock name of a *fairrw.Lease, *fairrw.RWMutex,
	// *fairrw.Mutex or *fairrw.QuorumRWMutex.
	Name func(x any) string
	// Mode returns the fairrw.Mode of a *fairrw.Lease, to compare with
	// fairrw.Read or fairrw.Write.
	Mode func(lease any) any
)

// Errors fairrw returns without exporting them.
var (
	// ErrUpgrade is wrapped, with fairrw.ErrNotAcquired, by Lease.Lock on a
	// read: a read is never upgraded to the write.
	ErrUpgrade = errors.New("fairrw: a read is never upgraded to the write")
	// ErrUnlocked is the cause of a Lease's Context after a successful Unlock.
	ErrUnlocked = errors.New("fairrw: lease unlocked")
)
