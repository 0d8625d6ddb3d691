package fairrw

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
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
	// renew renders one call of the batched renewal script renewScript
	// for holds, each renewed to lease.
	renew(lease time.Duration, holds []renewKey) (keys []string, args []string)
	renewScript() *script.Script
	// unlockLatch names the latch key of one unlock request, deleted after
	// the unlock as Java does.
	unlockLatch(k *lockKeys, request string) string
	// queued reports whether waiters hold entries that expire unless they
	// try again: their sleep is then bounded by a third of the lease, and a
	// waiter that gives up withdraws its entry.
	queued() bool
}

// renewKey is one hold as a renewal script names it: the lock's keys, the
// owner and mode of the hold, and whether it is a Mutex's (Java's renewal
// script renews a Client's RWMutex and Mutex holds alike, and must be told
// which is which). The renewer keeps the rest of a hold (renewHold).
type renewKey struct {
	keys  *lockKeys
	owner string
	mode  Mode
	mutex bool
}

// lockKeys are the names a policy derives from a lock name, once per handle.
type lockKeys struct {
	name string
	slot uint16
	// Keys are what the lock's waiters listen on: the pub/sub channel
	// releases publish on, the key whose invalidation means "try again"
	// ("" for none), and the format of the policy's messages on it.
	wait.Keys
	// fair are fairrw's keys of the name (wire.Fair): every policy's
	// scripts name some of them (the fence; the fair state, which the
	// Redisson formats refuse).
	fair wire.FairKeys
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
	// reserve is how many fencing tokens a write this attempt is granted
	// reserves, its own included (0 or 1: the token alone; see
	// wire.TokenReserve): a cohort's leader asks for them.
	reserve int
	// syncReplicas > 0 sends WAIT syncReplicas syncTimeout behind the
	// attempt, on its connection (WithSyncReplicas).
	syncReplicas int64
	syncTimeout  time.Duration
	// fair is where the fair policies render the attempt's wire request:
	// a request rendered through its layout's columns escapes, and this
	// one lives in the attempt's call already (one allocation fewer per
	// attempt). A request is sent by one try at a time (attempt's loop).
	fair wire.FairAcquire
}

type acquireReply struct {
	granted bool
	// fast: the fair policies' fast path granted it (a first hold on an
	// idle lock): the owner's last release may go to fair_unlock_fast.
	fast bool
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
	mode    Mode
	owner   string
	request string // unlock request id (32 hex digits), for the latch
	latch   string // the latch's key (policyImpl.unlockLatch), built once
	abandon bool   // give the owner up: mark it, drop its queue entries
	state   ownerState
	mayRead bool   // the owner may hold reads in Redis (it had one, or this is a read's)
	passed  uint64 // the highest token passed in the owner's cohort (owner.passed)
	// successor is an owner queued as a writer before the release (a
	// cohort's next leader: see cohort.prequeue); "" for none.
	successor string
	// fast: the owner's hold came from the fair policies' fast path and
	// it took no other since (see owner.fast).
	fast      bool
	stamp     time.Time
	window    time.Duration
	latchTTL  time.Duration
	markerTTL time.Duration
	queue     time.Duration
	publish   string
	// grants is told the writer a release granted the lock to, if any,
	// with its fencing token (grant on release: see lua/fair_lib.lua);
	// nil tells no one. A registry rather than a callback: a closure would
	// be one more allocation on every release.
	grants *wait.Registry
	// fastWire is where fair_unlock_fast's wire request is rendered, as
	// acquireRequest.fair. Only a Lease's last release sends it, by one
	// try at a time: a release tried again in the background is a new
	// request (Lease.followUp); a give-back, tried again with the same
	// one, never goes to the fast path.
	fastWire wire.FairUnlockFast
}

// kept is what the release scripts are told the owner still holds.
func (st ownerState) kept() wire.Kept {
	return wire.Kept{Writes: st.writes, WriteLeft: st.wcover, Reads: st.reads}
}

// releaseResult is what a release script answered (see wire.Released).
type releaseResult = wire.Released

const (
	releaseNotHeld   = wire.NotHeld   // nil: this owner held nothing
	releaseStillHeld = wire.StillHeld // 0: reentrant or shared holds remain
	releaseFreed     = wire.Freed     // 1: the hold was released
	// releaseStale (-3): the copy reached Redis after its window and changed
	// nothing; it must be sent again with a new stamp.
	releaseStale = wire.Stale
)

// parseAcquire reads every acquire script's reply (wire.DecodeAcquire); an
// error reply starting with FAIRRW_POLICY when another policy holds the
// name. A grant of the fair policies' fast path says so (fast).
func parseAcquire(res rueidis.RedisResult) (acquireReply, error) {
	a, err := wire.DecodeAcquire(res)
	if err != nil {
		return acquireReply{}, redisError(err)
	}
	switch a.Outcome {
	case wire.Granted:
		return acquireReply{granted: true, fast: a.Fast, token: a.Token}, nil
	case wire.Void:
		return acquireReply{void: true}, nil
	case wire.Gone:
		return acquireReply{gone: true}, nil
	default:
		return acquireReply{refused: true, wait: a.Wait, refusedUs: a.RefusedUs}, nil
	}
}

// parseRelease reads a Redisson-format release's reply (wire.DecodeRelease).
func parseRelease(res rueidis.RedisResult) (releaseResult, error) {
	r, err := wire.DecodeRelease(res)
	return r, redisError(err)
}

// heldUnder rewrites a refusal's "lock is held under policy <record>",
// where a fair state's record names its protocol too (wire.PolicyRecord),
// so that it reads once: the policy, and the protocol when it is not this
// version's.
func heldUnder(msg string) string {
	const lead = "lock is held under policy "
	rest, ok := strings.CutPrefix(msg, lead)
	if !ok {
		return msg
	}
	record, tail, _ := strings.Cut(rest, " ")
	policy, protocol := wire.ParsePolicyRecord(record)
	fair := policy == WriterPreferring().String() || policy == PhaseFair().String()
	if fair && protocol != wire.Protocol {
		policy += fmt.Sprintf(" by fairrw protocol %d (Clients of two protocols never share a lock)", protocol)
	}
	if tail != "" {
		policy += " " + tail
	}
	return lead + policy
}

// redisError turns the errors a caller can cause into sentinels: a name
// held under another policy (the scripts' FAIRRW_POLICY), or a key of
// another type where the lock keeps its state (WRONGTYPE: a key the lock
// did not write sits at one of its names). Both are definite: nothing was
// changed. So is a refusal by Redis's ACL (ErrPermission): Redis checks a
// script's command and keys before it runs, and the scripts check their
// channel before their first write.
func redisError(err error) error {
	rerr, ok := rueidis.IsRedisErr(err)
	if !ok {
		return err
	}
	msg := rerr.Error()
	switch {
	case refusedByACL(err):
		return permissionError(err)
	case strings.HasPrefix(msg, "FAIRRW_POLICY"):
		return &policyError{msg: heldUnder(strings.TrimPrefix(msg, "FAIRRW_POLICY "))}
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
