package fairrw

import "errors"

var (
	// ErrNotAcquired is returned by TryLock and TryRLock when the lock is
	// taken, and wrapped with ErrUpgrade when a read's owner asks for the
	// write.
	ErrNotAcquired = errors.New("fairrw: lock not acquired")

	// ErrUpgrade is returned (wrapping ErrNotAcquired too) by Lease.Lock on
	// a read: a read is never upgraded to the write, since two readers doing
	// so would wait for each other forever. It tells a bug in the caller
	// from contention.
	ErrUpgrade = errors.New("fairrw: a read is never upgraded to the write")

	// ErrNotHeld is returned by Unlock when the lease is not (or no longer)
	// held: unlocked before, lost, or never granted by Redis.
	ErrNotHeld = errors.New("fairrw: lock not held")

	// ErrLeaseLost is the error of a Lease whose hold Redis no longer keeps,
	// or could not confirm before the lease's local deadline. Done is closed
	// when it happens.
	ErrLeaseLost = errors.New("fairrw: lease lost")

	// ErrUnlocked is the cause (context.Cause) of a Lease's Context after a
	// successful Unlock: the lease ended as its holder asked, not lost.
	ErrUnlocked = errors.New("fairrw: lease unlocked")

	// ErrClosed is returned by every call on a closed Client, and wakes every
	// waiter when the Client closes.
	ErrClosed = errors.New("fairrw: client closed")

	// ErrInvalidName is returned for a lock name that is empty, too long, or
	// whose keys could not share one cluster hash slot. Nothing is sent to
	// Redis.
	ErrInvalidName = errors.New("fairrw: invalid lock name")

	// ErrInvalidOption is returned for an option with an invalid value, such
	// as a non-positive lease. Nothing is sent to Redis.
	ErrInvalidOption = errors.New("fairrw: invalid option")
)

// ErrNotReplicated is returned by an acquire under WithSyncReplicas when
// fewer replicas than asked acknowledged the grant within the timeout. The
// grant is given back before the error returns: a failover could have lost
// it.
var ErrNotReplicated = errors.New("fairrw: grant not acknowledged by enough replicas")

// ErrPolicyMismatch is returned when a lock name is held under another
// policy than the Client's: two policies on one name would not exclude each
// other, so the acquire is refused and nothing is changed.
var ErrPolicyMismatch = errors.New("fairrw: lock is held under another policy")

// ErrClockSkew is returned by an acquire that Redis found older than the
// accept window while this machine's clock says it was just sent: Redis's
// clock is ahead of this machine's by more than the unlock timeout, which
// the idempotence of retries assumes it is not (see WithUnlockTimeout).
var ErrClockSkew = errors.New("fairrw: the clocks of this machine and Redis differ too much")

// tagged is an error that reads once but matches several sentinels
// (errors.Is): a message naming the lock and the cause, without the chain
// of every wrapped error's text.
type tagged struct {
	msg  string
	errs []error
}

func (e *tagged) Error() string   { return e.msg }
func (e *tagged) Unwrap() []error { return e.errs }

// tag returns an error with message msg (which should name the lock and
// the cause) that errors.Is matches against each of errs.
func tag(msg string, errs ...error) error { return &tagged{msg: msg, errs: errs} }
