package fairrw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
)

// A Policy decides which waiter a lock admits next. Every policy has the same
// API; they differ in whom they make wait. Choose one with WithPolicy.
// Policies are values of this package only (the interface is sealed).
//
// One lock name must be used under one policy: an acquire under another
// policy than the one holding the name fails with ErrPolicyMismatch.
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
	// cancelWait withdraws a waiter that gives up (its queue entry, if the
	// policy keeps one), so that it blocks no one.
	cancelWait(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) error
	forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error)
	// renewEntry describes one (lock, owner, mode) for the batched renewal
	// script renewScript: the keys it passes and its arguments.
	renewEntry(k *lockKeys, owner string, mode Mode) (keys []string, args []string)
	renewScript() *script.Script
	// unlockLatch names the latch key of one unlock request, deleted after
	// the unlock as Java does.
	unlockLatch(k *lockKeys, request string) string
	// queued reports whether waiters hold entries that expire unless they
	// try again: their sleep is then bounded by a third of the lease.
	queued() bool
}

// lockKeys are the names a policy derives from a lock name, once per handle.
type lockKeys struct {
	name    string
	slot    uint16
	channel string // the pub/sub channel releases publish on
	tracked string // the key whose invalidation means "try again"; "" for none
}

type acquireRequest struct {
	mode     Mode
	owner    string // "<client UUID>:<owner id>"
	attempt  string // attempt id: a retry of the same id is a no-op
	lease    time.Duration
	queue    time.Duration // how long a waiter's entry lives unless refreshed
	latchTTL time.Duration
	publish  string
	wait     bool // queue up when refused (Lock, RLock), not for Try*
	tracked  bool // arm client tracking on the lock key with this attempt
	// syncReplicas > 0 sends WAIT syncReplicas syncTimeout behind the
	// attempt, on its connection (WithSyncReplicas).
	syncReplicas int64
	syncTimeout  time.Duration
}

type acquireReply struct {
	granted bool
	aborted bool          // the attempt had been aborted by its caller
	wait    time.Duration // the longest to wait before retrying
	token   uint64        // the fencing token of a grant
	// replicas is how many replicas acknowledged the attempt's writes, when
	// it was sent with WAIT.
	replicas int64
}

// runAcquire runs an acquire script s the way r asks: behind WAIT for
// replicas, or arming client tracking, or plainly. A synced attempt does
// not arm tracking: WAIT takes a dedicated connection, whose invalidations
// would not reach the waiter; pub/sub and the PTTL bound still wake it.
func runAcquire(ctx context.Context, rdb rueidis.Client, s *script.Script, keys, args []string, r *acquireRequest) (acquireReply, error) {
	switch {
	case r.syncReplicas > 0:
		res, acked, err := s.ExecSynced(ctx, rdb, keys, args, r.syncReplicas, r.syncTimeout)
		reply, rerr := parseAcquire(res)
		if rerr != nil {
			return reply, rerr
		}
		if err != nil {
			return reply, fmt.Errorf("fairrw: WAIT: %w", err)
		}
		reply.replicas = acked
		return reply, nil
	case r.tracked:
		return parseAcquire(s.ExecTracked(ctx, rdb, keys, args))
	default:
		return parseAcquire(s.Exec(ctx, rdb, keys, args))
	}
}

type releaseRequest struct {
	mode     Mode
	owner    string
	attempt  string // the attempt id of the hold being released
	request  string // unlock request id (32 hex digits), for the latch
	abort    bool   // mark the attempt latch aborted instead of deleting it
	lease    time.Duration
	queue    time.Duration
	latchTTL time.Duration
	publish  string
}

type releaseResult int

const (
	releaseNotHeld   releaseResult = iota // nil: this owner held nothing
	releaseStillHeld                      // 0: reentrant or shared holds remain
	releaseFreed                          // 1: the hold was released
)

// parseAcquire reads every acquire script's reply: {1, token} granted,
// {0, ms} refused (wait at most ms), {-1, 0} aborted; an error reply
// starting with FAIRRW_POLICY when another policy holds the name.
func parseAcquire(res rueidis.RedisResult) (acquireReply, error) {
	values, err := res.ToArray()
	if err != nil {
		if rerr, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(rerr.Error(), "FAIRRW_POLICY") {
			return acquireReply{}, &policyError{msg: strings.TrimPrefix(rerr.Error(), "FAIRRW_POLICY ")}
		}
		return acquireReply{}, err
	}
	if len(values) != 2 {
		return acquireReply{}, fmt.Errorf("fairrw: unexpected acquire reply of %d values", len(values))
	}
	status, err1 := values[0].AsInt64()
	value, err2 := values[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return acquireReply{}, fmt.Errorf("fairrw: unexpected acquire reply: %w", err)
	}
	switch status {
	case 1:
		return acquireReply{granted: true, token: uint64(value)}, nil
	case -1:
		return acquireReply{aborted: true}, nil
	default:
		return acquireReply{wait: time.Duration(value) * time.Millisecond}, nil
	}
}

// parseRelease reads every unlock script's reply: nil = not held by this
// owner, 0 = still held, 1 = released.
func parseRelease(res rueidis.RedisResult) (releaseResult, error) {
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return releaseNotHeld, nil
	case err != nil:
		return releaseNotHeld, err
	case n == 0:
		return releaseStillHeld, nil
	default:
		return releaseFreed, nil
	}
}

// policyError is the answer of a script that found the name held under
// another policy. It is definite: nothing was changed.
type policyError struct{ msg string }

// Error says which policy holds the name.
func (e *policyError) Error() string { return ErrPolicyMismatch.Error() + ": " + e.msg }

// Unwrap makes errors.Is(err, ErrPolicyMismatch) hold.
func (e *policyError) Unwrap() error { return ErrPolicyMismatch }

var attemptAbort = script.New("attempt_abort", true)

// abortAttempt settles an attempt latch: it reports whether the attempt had
// been granted, and otherwise marks it aborted so no late copy takes the lock.
func abortAttempt(ctx context.Context, c *Client, k *lockKeys, attempt string) (bool, error) {
	n, err := attemptAbort.Exec(ctx, c.rdb, []string{compat.AttemptLatch(k.name, attempt)}, []string{millis(c.unlockTimeout)}).AsInt64()
	return n == 1, err
}
