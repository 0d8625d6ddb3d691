package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// The decoders return Redis's own errors as they are (a caller turns
// FAIRRW_POLICY and WRONGTYPE into its sentinels), and a reply of another
// shape as an error of its own.

// Outcome is what an acquire script answered.
type Outcome uint8

const (
	// Refused: {0, ms[, us]}; another owner holds (the attempt queued up,
	// under a fair policy, if it waits).
	Refused Outcome = iota
	// Granted: {1, token}, or the bare token from the fair policies' fast
	// path (lua/fair_acquire_fast.lua; Acquired.Fast).
	Granted
	// Void: {-1, 0}; the attempt is stale or its owner was given up: it
	// took nothing and never will.
	Void
	// Gone: {-2, 0}; a further hold's owner holds nothing any more.
	Gone
)

// Acquired is every acquire script's reply (fair, Redisson and RLock alike).
type Acquired struct {
	Outcome Outcome
	// Token is a grant's fencing token.
	Token uint64
	// Wait is, for a refusal, the longest to wait before trying again.
	Wait time.Duration
	// RefusedUs is, for a fair refusal, the server's clock in µs: a grant
	// made after it has a greater token.
	RefusedUs uint64
	// Fast: the fair policies' fast path granted it (a first hold on an
	// idle lock), so the owner's last release may go to fair_unlock_fast.
	Fast bool
}

// DecodeAcquire reads {1, token}, {0, ms}, {0, ms, us} (a fair refusal),
// {-1, 0} or {-2, 0}.
func DecodeAcquire(res rueidis.RedisResult) (Acquired, error) {
	if token, err := res.AsInt64(); err == nil {
		return Acquired{Outcome: Granted, Token: uint64(token), Fast: true}, nil
	}
	values, err := res.ToArray()
	if err != nil {
		return Acquired{}, err
	}
	if len(values) != 2 && len(values) != 3 {
		return Acquired{}, fmt.Errorf("fairrw: unexpected acquire reply of %d values", len(values))
	}
	status, err1 := values[0].AsInt64()
	value, err2 := values[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return Acquired{}, fmt.Errorf("fairrw: unexpected acquire reply: %w", err)
	}
	switch status {
	case 1:
		return Acquired{Outcome: Granted, Token: uint64(value)}, nil
	case -1:
		return Acquired{Outcome: Void}, nil
	case -2:
		return Acquired{Outcome: Gone}, nil
	}
	a := Acquired{Outcome: Refused, Wait: time.Duration(value) * time.Millisecond}
	if len(values) == 3 { // a fair refusal says when, on the server's clock
		us, err := values[2].AsInt64()
		if err != nil {
			return Acquired{}, fmt.Errorf("fairrw: unexpected acquire reply: %w", err)
		}
		a.RefusedUs = uint64(us)
	}
	return a, nil
}

// Released is what a release script answered.
type Released uint8

const (
	// NotHeld: the owner held no such hold (nil, or -1 from a fair
	// release).
	NotHeld Released = iota
	// StillHeld: 0; holds of the owner or of others remain.
	StillHeld
	// Freed: 1; the owner's last hold of that mode went.
	Freed
	// Stale: -3; the copy reached Redis after its window and changed
	// nothing: it must be sent again with a new stamp.
	Stale
)

// released reads a release's result code.
func released(n int64) Released {
	switch {
	case n == -3:
		return Stale
	case n < 0:
		return NotHeld
	case n == 0:
		return StillHeld
	default:
		return Freed
	}
}

// DecodeRelease reads a Redisson-format release's reply
// (lua/redisson_unlock.lua, lua/redisson_lock_unlock.lua): nil, 0, 1 or -3.
func DecodeRelease(res rueidis.RedisResult) (Released, error) {
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return NotHeld, nil
	case err != nil:
		return NotHeld, err
	}
	return released(n), nil
}

// FairUnlocked is lua/fair_unlock.lua's reply.
type FairUnlocked struct {
	Result Released
	// Grantee and Token name the writer the release granted the lock to
	// ("" and 0: none).
	Grantee string
	Token   uint64
}

// DecodeFairUnlock reads {result, grantee, token}.
func DecodeFairUnlock(res rueidis.RedisResult) (FairUnlocked, error) {
	values, err := res.ToArray()
	if err != nil {
		return FairUnlocked{}, err
	}
	if len(values) != 3 {
		return FairUnlocked{}, fmt.Errorf("fairrw: unexpected unlock reply of %d values", len(values))
	}
	n, err1 := values[0].AsInt64()
	grantee, err2 := values[1].ToString()
	token, err3 := values[2].AsInt64()
	if err := errors.Join(err1, err2, err3); err != nil {
		return FairUnlocked{}, fmt.Errorf("fairrw: unexpected unlock reply: %w", err)
	}
	return FairUnlocked{Result: released(n), Grantee: grantee, Token: uint64(token)}, nil
}

// DecodeFairUnlockFast reads lua/fair_unlock_fast.lua's reply: nil when it
// did not apply (applied false: the caller sends fair_unlock, under the
// same request id), else fair_unlock's result (1, 0, -1), the first
// answer's when an earlier copy answered.
func DecodeFairUnlockFast(res rueidis.RedisResult) (r Released, applied bool, err error) {
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return NotHeld, false, nil
	case err != nil:
		return NotHeld, false, err
	}
	return released(n), true, nil
}

// DecodeForceUnlock reads a read-write lock's force unlock reply
// (lua/fair_force_unlock.lua, lua/redisson_force_unlock.lua): 1 when holders
// were removed.
func DecodeForceUnlock(res rueidis.RedisResult) (freed bool, err error) {
	n, err := res.AsInt64()
	return n == 1, err
}

// DecodeMutexForceUnlock reads lua/redisson_lock_force_unlock.lua's reply:
// 1 freed, 0 not held, -1 the name is a read-write lock's (left alone).
func DecodeMutexForceUnlock(res rueidis.RedisResult) (freed, rwlock bool, err error) {
	n, err := res.AsInt64()
	return n == 1, err == nil && n < 0, err
}

// DecodeRenew reads a renewal's reply (lua/fair_renew.lua,
// lua/redisson_renew.lua): one integer per hold, 1 when it was extended.
func DecodeRenew(res rueidis.RedisResult, holds int) (alive []bool, err error) {
	n, err := res.AsIntSlice()
	if err != nil {
		return nil, err
	}
	if len(n) != holds {
		return nil, fmt.Errorf("renewal returned %d results for %d holds", len(n), holds)
	}
	alive = make([]bool, holds)
	for i, v := range n {
		alive[i] = v == 1
	}
	return alive, nil
}

// DecodeFenceRaise reads lua/fence_raise.lua's reply: the token kept.
func DecodeFenceRaise(res rueidis.RedisResult) (uint64, error) {
	n, err := res.AsInt64()
	return uint64(n), err
}
