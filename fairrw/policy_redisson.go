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

// Redisson returns the policy that shares locks with Java Redisson's
// RReadWriteLock. It prefers readers: overlapping readers can starve writers.
func Redisson() Policy { return redissonPolicy{} }

type redissonPolicy struct{}

// String returns "redisson".
func (redissonPolicy) String() string { return "redisson" }

func (redissonPolicy) impl() policyImpl { return redissonPolicy{} }
func (redissonPolicy) name() string     { return "redisson" }

// Acquire and unlock scripts are not retried by rueidis: fairrw retries
// them itself, so that it knows when a copy may still be on its way to Redis
// (owner.unsure; an unlock latch kept for the accept window).
var (
	redissonReadAcquire  = script.NewFrom("redisson_read_acquire", lua.Compose("common", "redisson_lib", "redisson_read_acquire"), false)
	redissonWriteAcquire = script.NewFrom("redisson_write_acquire", lua.Compose("common", "redisson_lib", "redisson_write_acquire"), false)
	redissonUnlock       = script.NewFrom("redisson_unlock", lua.Compose("common", "redisson_lib", "redisson_unlock"), false)
	redissonRenew        = script.New("redisson_renew", true)
	redissonForceUnlock  = script.New("redisson_force_unlock", false)
)

func (redissonPolicy) keys(name string) (lockKeys, error) {
	if err := validateName(name, compat.Channel(name), compat.SuffixName(name, "x"), compat.OwnerMarker(name, "x"), compat.Fence(name), compat.Fair(name).State, compat.Fair(name).Readers); err != nil {
		return lockKeys{}, err
	}
	return lockKeys{name: name, slot: slotOf(name), channel: compat.Channel(name), tracked: name}, nil
}

func (redissonPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	marker := compat.OwnerMarker(k.name, r.owner)
	fair, fence := compat.Fair(k.name), compat.Fence(k.name)
	stamp, window, further := stampArg(r.stamp), millis(r.window), strconv.Itoa(r.further)
	if r.mode == Read {
		return runAcquire(ctx, rdb, redissonReadAcquire,
			[]string{k.name, compat.LeaseKeyPrefix(k.name, r.owner), marker, fair.State, fence, fair.Readers},
			[]string{holdMillis(r.lease), compat.ReadField(r.owner), compat.WriteField(r.owner), stamp, window, further}, r)
	}
	return runAcquire(ctx, rdb, redissonWriteAcquire,
		[]string{k.name, marker, fair.State, fence, fair.Readers},
		[]string{holdMillis(r.lease), compat.WriteField(r.owner), stamp, window, further}, r)
}

func (redissonPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	mode := "r"
	if r.mode == Write {
		mode = "w"
	}
	args := []string{mode, compat.ReadField(r.owner), compat.WriteField(r.owner), r.publish, millis(r.latchTTL),
		boolArg(r.abandon), millis(r.markerTTL), stampArg(r.stamp), millis(r.window)}
	args = append(append(args, r.state.writeArgs()...), r.state.readArgs()...)
	return parseRelease(redissonUnlock.Exec(ctx, rdb,
		[]string{k.name, k.channel, compat.LeaseKeyPrefix(k.name, r.owner), compat.KeyPrefix(k.name), compat.UnlockLatch(k.name, r.request), compat.OwnerMarker(k.name, r.owner)},
		args))
}

func (redissonPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	msg := compat.UnlockMessage
	if mode == Write {
		msg = compat.ReadUnlockMessage
	}
	n, err := redissonForceUnlock.Exec(ctx, rdb, []string{k.name, k.channel}, []string{mode.String(), msg, publish}).AsInt64()
	return n == 1, redisError(err)
}

func (redissonPolicy) renewEntry(k *lockKeys, owner string, mode Mode) ([]string, []string) {
	if mode == Write {
		return []string{k.name}, []string{"w", compat.WriteField(owner), ""}
	}
	return []string{k.name}, []string{"r", compat.ReadField(owner), compat.LeaseKeyPrefix(k.name, owner)}
}

func (redissonPolicy) queued() bool { return false }

func (redissonPolicy) renewScript() *script.Script { return redissonRenew }

func (redissonPolicy) unlockLatch(k *lockKeys, request string) string {
	return compat.UnlockLatch(k.name, request)
}

// millis renders d in whole milliseconds, at least 1 (Redis's resolution).
func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}

// stampArg renders a send time as the scripts compare it with the server's
// clock: Unix milliseconds.
func stampArg(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// signal decodes Java's messages: "1" (a writer left, or a write was
// downgraded) can let every reader in and one writer; "0" (the last reader
// left, or a lock was freed) one waiter of either mode.
func (redissonPolicy) signal(msg string) wakeSignal {
	if msg == compat.ReadUnlockMessage {
		return wakeSignal{readers: true, writer: writerOne}
	}
	return wakeSignal{writer: writerOrAnyMode}
}
