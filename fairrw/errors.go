package fairrw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/wait"
)

var (
	// ErrNotAcquired is returned by TryLock and TryRLock when the lock is taken.
	ErrNotAcquired = errors.New("fairrw: lock not acquired")

	// errUpgrade is returned, with ErrNotAcquired, by Lease.Lock on a read: a
	// read is never upgraded to the write.
	errUpgrade = hidden.ErrUpgrade

	// ErrNotHeld is returned for a lease or lock that is not held: unlocked
	// before, lost, or gone from Redis.
	ErrNotHeld = errors.New("fairrw: lock not held")

	// ErrLeaseLost is the error of a Lease whose hold Redis no longer keeps, or
	// could not confirm before its deadline.
	ErrLeaseLost = errors.New("fairrw: lease lost")

	// errUnlocked is the cause of a Lease's Context after a successful Unlock.
	errUnlocked = hidden.ErrUnlocked

	// ErrClosed is returned by every call on a closed Client, and to its
	// waiters: the wait registry's own (wait.ErrClosed), one value both ways.
	ErrClosed = wait.ErrClosed

	// ErrInvalidName is returned for a lock name that is empty, longer than
	// 4096 bytes, or whose keys could not share one cluster slot. Nothing is
	// sent to Redis.
	ErrInvalidName = errors.New("fairrw: invalid lock name")

	// ErrInvalidOption is returned for an invalid option. Nothing is sent to
	// Redis.
	ErrInvalidOption = errors.New("fairrw: invalid option")
)

// ErrNotReplicated is returned under WithSyncReplicas when fewer replicas than
// asked acknowledged a grant in time. The grant was given back.
var ErrNotReplicated = errors.New("fairrw: grant not acknowledged by enough replicas")

// ErrPolicyMismatch is returned when a lock name is held under another policy
// or as the other kind of lock (Mutex or RWMutex), or a key of another type
// sits at one of its names. Nothing is changed.
var ErrPolicyMismatch = errors.New("fairrw: lock is held under another policy")

// ErrClockSkew is returned by an acquire when Redis's clock is ahead of this
// machine's by more than the unlock timeout, as safe retries assume it is not.
var ErrClockSkew = errors.New("fairrw: the clocks of this machine and Redis differ too much")

// ErrUnavailable is returned, wrapping the ctx's error and naming the
// address, by a call whose ctx ended before the Client first reached Redis,
// or while Redis was unavailable: its connection refused or broken, a round
// trip unanswered for 100 ms or more, or (a waiting Lock) while the Client
// found Redis unreachable. A lock-wait timeout wraps the ctx's error only.
var ErrUnavailable = errors.New("fairrw: Redis unavailable")

// ErrPermission is returned when Redis refused the Client's credentials or
// the command a call sent: a wrong password or user (WRONGPASS), a server
// that wants a password (NOAUTH), or an ACL user not allowed a command, a
// key or a channel the call needs (NOPERM; docs/acl.md lists what each
// policy needs). The error names the lock and quotes the server's refusal,
// never the password. A call refused so is not retried. A refused command,
// key or channel changed nothing in Redis: Redis checks the command and a
// script's keys before it runs it, and every script that publishes checks
// its channel before its first write. (A user lacking a command that a
// script runs inside, docs/acl.md lists them, is refused where the script
// runs it.)
var ErrPermission = errors.New("fairrw: permission denied by Redis")

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

// andEnded is err, with ctx's error beside it once ctx has ended: a call
// that fails as its ctx ends (Redis refused it at that moment, say, on a
// machine that ran it late) also says that its ctx ended, so that a caller
// testing errors.Is(err, context.DeadlineExceeded) sees what happened to
// its deadline, whichever came first.
//
// A call that fails within endingSoon of its deadline counts as failing as
// it ends: rueidis retries a read-only call (Inspect's) on a lost
// connection only while its next try, after a delay that doubles up to a
// second, still comes before the deadline, and otherwise returns the last
// error at once, some milliseconds early (5 ms seen, Redis stopped).
func andEnded(ctx context.Context, err error) []error {
	ended := ctx.Err()
	if d, ok := ctx.Deadline(); ended == nil && ok && time.Until(d) < endingSoon {
		ended = context.DeadlineExceeded
	}
	if ended != nil && !errors.Is(err, ended) {
		return []error{err, ended}
	}
	return []error{err}
}

// endingSoon is how near its deadline a failed call counts as ending with
// it (andEnded).
const endingSoon = 20 * time.Millisecond

// closedError is ErrClosed for a call on the lock name: it reads as the
// other errors do, naming the lock.
func closedError(name string) error {
	return tag(fmt.Sprintf("fairrw: %q: client closed", name), ErrClosed)
}

// reason is err's message without its leading "fairrw: ", for a message
// that goes on from a "fairrw: " of its own.
func reason(err error) string { return strings.TrimPrefix(err.Error(), "fairrw: ") }

// errClosedLease is the error of the leases still held when Close runs.
var errClosedLease = tag("fairrw: lease lost: the client closed", ErrLeaseLost, ErrClosed)
