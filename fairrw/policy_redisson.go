package fairrw

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
)

// Redisson returns the policy that is wire-compatible with Java Redisson's
// RReadWriteLock: the same hash, fields, lease keys, channel and messages, so
// Go and Java services can share one lock. It is reader-preferring: a read
// is granted whenever no other owner holds the write, so a steady stream of
// overlapping readers can starve writers (Redisson calls it non-fair).
func Redisson() Policy { return redissonPolicy{} }

type redissonPolicy struct{}

func (redissonPolicy) String() string   { return "redisson" }
func (redissonPolicy) impl() policyImpl { return redissonPolicy{} }
func (redissonPolicy) name() string     { return "redisson" }

var (
	redissonReadAcquire  = script.New("redisson_read_acquire", true)
	redissonWriteAcquire = script.New("redisson_write_acquire", true)
	redissonReadUnlock   = script.New("redisson_read_unlock", true)
	redissonWriteUnlock  = script.New("redisson_write_unlock", true)
	redissonRenew        = script.New("redisson_renew", true)
	redissonForceUnlock  = script.New("redisson_force_unlock", false)
)

func (redissonPolicy) keys(name string) (lockKeys, error) {
	if err := validateName(name, compat.Channel(name), compat.SuffixName(name, "x"), compat.AttemptLatch(name, "x")); err != nil {
		return lockKeys{}, err
	}
	return lockKeys{name: name, slot: slotOf(name), channel: compat.Channel(name), tracked: name}, nil
}

func (redissonPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	latch := compat.AttemptLatch(k.name, r.attempt)
	s, keys, args := redissonWriteAcquire, []string{k.name, latch}, []string{millis(r.lease), compat.WriteField(r.owner), millis(r.latchTTL)}
	if r.mode == Read {
		s = redissonReadAcquire
		keys = []string{k.name, compat.LeaseKeyPrefix(k.name, r.owner), latch}
		args = []string{millis(r.lease), compat.ReadField(r.owner), compat.WriteField(r.owner), millis(r.latchTTL)}
	}
	if r.tracked {
		return parseAcquire(s.ExecTracked(ctx, rdb, keys, args))
	}
	return parseAcquire(s.Exec(ctx, rdb, keys, args))
}

// parseAcquire reads Redisson's acquire convention: nil = granted, an integer
// = PTTL, plus fairrw's "aborted" for an attempt its caller gave up.
func parseAcquire(res rueidis.RedisResult) (acquireReply, error) {
	if err := res.Error(); err != nil {
		if rueidis.IsRedisNil(err) {
			return acquireReply{granted: true}, nil
		}
		return acquireReply{}, err
	}
	msg, _ := res.ToMessage()
	if s, err := msg.ToString(); err == nil && s == compat.AttemptAborted {
		return acquireReply{aborted: true}, nil
	}
	pttl, err := msg.AsInt64()
	if err != nil {
		return acquireReply{}, fmt.Errorf("fairrw: unexpected acquire reply: %w", err)
	}
	return acquireReply{wait: time.Duration(pttl) * time.Millisecond}, nil
}

func (redissonPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	latch := compat.UnlockLatch(k.name, r.request)
	attemptLatch := compat.AttemptLatch(k.name, r.attempt)
	action := "del"
	if r.abort {
		action = "abort"
	}
	var res rueidis.RedisResult
	if r.mode == Read {
		res = redissonReadUnlock.Exec(ctx, rdb,
			[]string{k.name, k.channel, compat.LeaseKeyPrefix(k.name, r.owner), compat.KeyPrefix(k.name), latch, attemptLatch},
			[]string{compat.UnlockMessage, compat.ReadField(r.owner), r.publish, millis(r.latchTTL), action, millis(r.latchTTL)})
	} else {
		res = redissonWriteUnlock.Exec(ctx, rdb,
			[]string{k.name, k.channel, latch, attemptLatch},
			[]string{compat.ReadUnlockMessage, millis(r.lease), compat.WriteField(r.owner), r.publish, millis(r.latchTTL), action, millis(r.latchTTL)})
	}
	return parseRelease(res)
}

// parseRelease reads Redisson's unlock convention: nil = not held by this
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

func (redissonPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	msg := compat.UnlockMessage
	if mode == Write {
		msg = compat.ReadUnlockMessage
	}
	n, err := redissonForceUnlock.Exec(ctx, rdb, []string{k.name, k.channel}, []string{mode.String(), msg, publish}).AsInt64()
	return n == 1, err
}

func (redissonPolicy) renewEntry(k *lockKeys, owner string, mode Mode) (string, []string) {
	if mode == Write {
		return k.name, []string{"w", compat.WriteField(owner), ""}
	}
	return k.name, []string{"r", compat.ReadField(owner), compat.LeaseKeyPrefix(k.name, owner)}
}

func (redissonPolicy) renewScript() *script.Script { return redissonRenew }

func (redissonPolicy) unlockLatch(k *lockKeys, request string) string {
	return compat.UnlockLatch(k.name, request)
}

func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}
