package fairrw

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
)

// A Policy decides which waiter a lock admits next. Every policy has the same
// API; they differ in whom they make wait. Choose one with WithPolicy.
// Policies are values of this package only (the interface is sealed).
type Policy interface {
	// String names the policy, for logs and metrics.
	String() string
	impl() policyImpl
}

// policyImpl is what a policy does on the wire. It validates names before any
// command is built and keeps every key of a lock in one cluster slot.
type policyImpl interface {
	name() string
	keys(name string) (lockKeys, error)
	acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error)
	release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error)
	forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error)
	// renewEntry describes one (lock, owner, mode) for the batched renewal
	// script renewScript: the key it passes and its arguments.
	renewEntry(k *lockKeys, owner string, mode Mode) (key string, args []string)
	renewScript() *script.Script
	// unlockLatch names the latch key of one unlock request, deleted after
	// the unlock as Java does.
	unlockLatch(k *lockKeys, request string) string
}

// lockKeys are the names a policy derives from a lock name, once per handle.
type lockKeys struct {
	name    string
	slot    uint16
	channel string // the pub/sub channel releases publish on
	tracked string // the key whose invalidation means "try again"
}

type acquireRequest struct {
	mode     Mode
	owner    string // "<client UUID>:<owner id>"
	attempt  string // attempt id: a retry of the same id is a no-op
	lease    time.Duration
	latchTTL time.Duration
	tracked  bool // arm client tracking on the lock key with this attempt
}

type acquireReply struct {
	granted bool
	aborted bool          // the attempt had been aborted by its caller
	wait    time.Duration // the lock's PTTL: the longest to wait before retrying
}

type releaseRequest struct {
	mode     Mode
	owner    string
	attempt  string // the attempt id of the hold being released
	request  string // unlock request id (32 hex digits), for the latch
	abort    bool   // mark the attempt latch aborted instead of deleting it
	lease    time.Duration
	latchTTL time.Duration
	publish  string
}

type releaseResult int

const (
	releaseNotHeld   releaseResult = iota // nil: this owner held nothing
	releaseStillHeld                      // 0: reentrant or shared holds remain
	releaseFreed                          // 1: the hold was released
)

var attemptAbort = script.New("attempt_abort", true)

// abortAttempt settles an attempt latch: it reports whether the attempt had
// been granted, and otherwise marks it aborted so no late copy takes the lock.
func abortAttempt(ctx context.Context, c *Client, k *lockKeys, attempt string) (bool, error) {
	n, err := attemptAbort.Exec(ctx, c.rdb, []string{compat.AttemptLatch(k.name, attempt)}, []string{millis(c.unlockTimeout)}).AsInt64()
	return n == 1, err
}
