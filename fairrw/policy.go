package fairrw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/script"
)

// A Policy decides which waiter a lock admits next; choose one with
// WithPolicy. An acquire under another policy than the one holding the name
// fails with ErrPolicyMismatch and changes nothing.
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
	// script renewScript: the keys it passes and its arguments.
	renewEntry(k *lockKeys, owner string, mode Mode) (keys []string, args []string)
	renewScript() *script.Script
	// unlockLatch names the latch key of one unlock request, deleted after
	// the unlock as Java does.
	unlockLatch(k *lockKeys, request string) string
	// queued reports whether waiters hold entries that expire unless they
	// try again: their sleep is then bounded by a third of the lease, and a
	// waiter that gives up withdraws its entry.
	queued() bool
	// signal decodes a message on the lock's channel: whom it lets in.
	signal(msg string) wakeSignal
}

// lockKeys are the names a policy derives from a lock name, once per handle.
type lockKeys struct {
	name    string
	slot    uint16
	channel string // the pub/sub channel releases publish on
	tracked string // the key whose invalidation means "try again"; "" for none
}

type acquireRequest struct {
	mode  Mode
	owner string // "<client UUID>:<owner id>"
	lease time.Duration
	queue time.Duration // how long a waiter's entry lives unless refreshed
	// stamp is when the attempt was first sent (the client's wall clock):
	// Redis refuses a copy that arrives more than window later (see
	// lua/common.lua), so a retry counts once however late it runs.
	stamp   time.Time
	window  time.Duration
	publish string
	wait    bool // queue up when refused (Lock, RLock), not for Try*
	notify  bool // refused without queueing, be told when the way is clear (a quorum Lock's)
	// further > 0 takes a further hold of an owner that holds already,
	// and makes further its count of holds in mode; 0 is a first hold.
	further int
	tracked bool // arm client tracking on the lock key with this attempt
	// syncReplicas > 0 sends WAIT syncReplicas syncTimeout behind the
	// attempt, on its connection (WithSyncReplicas).
	syncReplicas int64
	syncTimeout  time.Duration
}

type acquireReply struct {
	granted bool
	// refused: the script refused the attempt (and refreshed its queue
	// entry, under a fair policy, if it waits): a grant made on its behalf
	// later cannot precede the attempt's send.
	refused bool
	// refusedUs is the server's clock (µs) at a fair refusal: a grant
	// made after it has a greater token (see RWMutex.grantedBy).
	refusedUs uint64
	// void: the attempt took nothing and never will: it reached Redis too
	// late, or its owner had been given up.
	void bool
	// gone: a further hold's owner holds nothing any more in Redis.
	gone  bool
	wait  time.Duration // the longest to wait before retrying
	token uint64        // the fencing token of a grant
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

// releaseRequest releases one hold of mode, or gives an owner up
// (abandon), and writes what the owner still holds (state).
type releaseRequest struct {
	mode      Mode
	owner     string
	request   string // unlock request id (32 hex digits), for the latch
	abandon   bool   // give the owner up: mark it, drop its queue entries
	state     ownerState
	mayRead   bool // the owner may hold reads in Redis (it had one, or this is a read's)
	stamp     time.Time
	window    time.Duration
	latchTTL  time.Duration
	markerTTL time.Duration
	queue     time.Duration
	publish   string
	// granted is told the writer a release granted the lock to, if any,
	// with its fencing token (grant on release: see lua/fair_lib.lua).
	granted func(owner string, token uint64)
}

// writeArgs renders the owner's writes as the release scripts take them:
// the count and the longest one's time left (with LeaseMargin, rounded up).
func (st ownerState) writeArgs() []string {
	if st.writes == 0 {
		return []string{"0", "0"}
	}
	return []string{strconv.Itoa(st.writes), holdMillis(st.wcover)}
}

// readArgs renders each read's time left, the longest first.
func (st ownerState) readArgs() []string {
	args := make([]string, len(st.reads))
	for i, d := range st.reads {
		args[i] = holdMillis(d)
	}
	return args
}

// readCover is the longest time a read of the owner has left (0: none).
func (st ownerState) readCover() time.Duration {
	if len(st.reads) == 0 {
		return 0
	}
	return st.reads[0]
}

type releaseResult int

const (
	releaseNotHeld   releaseResult = iota // nil: this owner held nothing
	releaseStillHeld                      // 0: reentrant or shared holds remain
	releaseFreed                          // 1: the hold was released
	// releaseStale (-3): the copy reached Redis after its window and changed
	// nothing; it must be sent again with a new stamp.
	releaseStale
)

// parseAcquire reads every acquire script's reply: {1, token} granted,
// {0, ms} refused (wait at most ms), {-1, 0} void, {-2, 0} a further hold's
// owner gone; an error reply starting with FAIRRW_POLICY when another
// policy holds the name.
func parseAcquire(res rueidis.RedisResult) (acquireReply, error) {
	values, err := res.ToArray()
	if err != nil {
		return acquireReply{}, redisError(err)
	}
	if len(values) != 2 && len(values) != 3 {
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
		return acquireReply{void: true}, nil
	case -2:
		return acquireReply{gone: true}, nil
	default:
		r := acquireReply{refused: true, wait: time.Duration(value) * time.Millisecond}
		if len(values) == 3 { // a fair refusal says when, on the server's clock
			us, err := values[2].AsInt64()
			if err != nil {
				return acquireReply{}, fmt.Errorf("fairrw: unexpected acquire reply: %w", err)
			}
			r.refusedUs = uint64(us)
		}
		return r, nil
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
		return releaseNotHeld, redisError(err)
	case n == 0:
		return releaseStillHeld, nil
	case n == -3:
		return releaseStale, nil
	case n < 0:
		return releaseNotHeld, nil
	default:
		return releaseFreed, nil
	}
}

// redisError turns the errors a caller can cause into sentinels: a name
// held under another policy (the scripts' FAIRRW_POLICY), or a key of
// another type where the lock keeps its state (WRONGTYPE: a key the lock
// did not write sits at one of its names). Both are definite: nothing was
// changed.
func redisError(err error) error {
	rerr, ok := rueidis.IsRedisErr(err)
	if !ok {
		return err
	}
	msg := rerr.Error()
	switch {
	case strings.HasPrefix(msg, "FAIRRW_POLICY"):
		return &policyError{msg: strings.TrimPrefix(msg, "FAIRRW_POLICY ")}
	case strings.Contains(msg, "WRONGTYPE"):
		return &policyError{msg: "a key of another kind is stored under the lock's name (" + msg + ")"}
	}
	return err
}

// policyError is the answer of a script that found the name held under
// another policy. It is definite: nothing was changed.
type policyError struct{ msg string }

// Error says which policy holds the name.
func (e *policyError) Error() string { return "fairrw: " + e.msg }

// Unwrap makes errors.Is(err, ErrPolicyMismatch) hold.
func (e *policyError) Unwrap() error { return ErrPolicyMismatch }
