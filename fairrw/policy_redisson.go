package fairrw

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/lua"
)

// Redisson returns the policy that is wire-compatible with Java Redisson's
// RReadWriteLock: the same hash, fields, lease keys, channel and messages, so
// Go and Java services can share one lock. It is reader-preferring: a read
// is granted whenever no other owner holds the write, so a steady stream of
// overlapping readers can starve writers (Redisson calls it non-fair).
func Redisson() Policy { return redissonPolicy{} }

type redissonPolicy struct{}

// String returns "redisson".
func (redissonPolicy) String() string { return "redisson" }

func (redissonPolicy) impl() policyImpl { return redissonPolicy{} }
func (redissonPolicy) name() string     { return "redisson" }

var (
	redissonReadAcquire  = script.NewFrom("redisson_read_acquire", lua.Compose("redisson_lib", "redisson_read_acquire"), true)
	redissonWriteAcquire = script.NewFrom("redisson_write_acquire", lua.Compose("redisson_lib", "redisson_write_acquire"), true)
	redissonReadUnlock   = script.NewFrom("redisson_read_unlock", lua.Compose("redisson_lib", "redisson_read_unlock"), true)
	redissonWriteUnlock  = script.NewFrom("redisson_write_unlock", lua.Compose("redisson_lib", "redisson_write_unlock"), true)
	redissonRenew        = script.New("redisson_renew", true)
	redissonForceUnlock  = script.New("redisson_force_unlock", false)
)

func (redissonPolicy) keys(name string) (lockKeys, error) {
	if err := validateName(name, compat.Channel(name), compat.SuffixName(name, "x"), compat.AttemptLatch(name, "x"), compat.Fence(name), compat.Fair(name).State); err != nil {
		return lockKeys{}, err
	}
	return lockKeys{name: name, slot: slotOf(name), channel: compat.Channel(name), tracked: name}, nil
}

func (redissonPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	latch := compat.AttemptLatch(k.name, r.attempt)
	fair, fence := compat.Fair(k.name).State, compat.Fence(k.name)
	s, keys, args := redissonWriteAcquire, []string{k.name, latch, fair, fence}, []string{millis(r.lease), compat.WriteField(r.owner), millis(r.latchTTL)}
	if r.mode == Read {
		s = redissonReadAcquire
		keys = []string{k.name, compat.LeaseKeyPrefix(k.name, r.owner), latch, fair, fence}
		args = []string{millis(r.lease), compat.ReadField(r.owner), compat.WriteField(r.owner), millis(r.latchTTL)}
	}
	return runAcquire(ctx, rdb, s, keys, args, r)
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

func (redissonPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	msg := compat.UnlockMessage
	if mode == Write {
		msg = compat.ReadUnlockMessage
	}
	n, err := redissonForceUnlock.Exec(ctx, rdb, []string{k.name, k.channel}, []string{mode.String(), msg, publish}).AsInt64()
	return n == 1, err
}

func (redissonPolicy) renewEntry(k *lockKeys, owner string, mode Mode) ([]string, []string) {
	if mode == Write {
		return []string{k.name}, []string{"w", compat.WriteField(owner), ""}
	}
	return []string{k.name}, []string{"r", compat.ReadField(owner), compat.LeaseKeyPrefix(k.name, owner)}
}

// cancelWait has nothing to withdraw: Redisson's waiters leave no trace.
func (redissonPolicy) cancelWait(context.Context, rueidis.Client, *lockKeys, *acquireRequest) error {
	return nil
}

func (redissonPolicy) queued() bool { return false }

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
