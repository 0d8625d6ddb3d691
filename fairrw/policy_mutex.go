package fairrw

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/lua"
)

// mutexPolicy is the wire format of Java Redisson's RLock, the handle policy
// of every Mutex whatever the Client's Policy: the hash N with one field
// "<client>:<owner>" = hold count, the channel "redisson_lock__channel:{N}"
// and the message "0". It has no read mode.
type mutexPolicy struct{}

var (
	redissonLockAcquire     = script.NewFrom("redisson_lock_acquire", lua.Compose("common", "redisson_lib", "redisson_lock_acquire"), false)
	redissonLockUnlock      = script.NewFrom("redisson_lock_unlock", lua.Compose("common", "redisson_lib", "redisson_lock_unlock"), false)
	redissonLockForceUnlock = script.New("redisson_lock_force_unlock", false)
)

// mutexPolicyName names the Mutex's wire format in telemetry, as Inspect
// reports it.
const mutexPolicyName = PolicyMutex

func (mutexPolicy) name() string { return mutexPolicyName }

func (mutexPolicy) keys(name string) (lockKeys, error) {
	channel := compat.MutexChannel(name)
	if err := validateName(name, channel, compat.OwnerMarker(name, "x"), compat.UnlockLatch(name, "x"), compat.Fence(name), compat.Fair(name).State, compat.Fair(name).Readers); err != nil {
		return lockKeys{}, err
	}
	return lockKeys{name: name, slot: slotOf(name), channel: channel, tracked: name}, nil
}

func (mutexPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	if r.mode != Write {
		return acquireReply{}, fmt.Errorf("%w: a mutex has no read mode", ErrInvalidOption)
	}
	fair := compat.Fair(k.name)
	keys := []string{k.name, compat.OwnerMarker(k.name, r.owner), fair.State, compat.Fence(k.name), fair.Readers}
	args := []string{holdMillis(r.lease), compat.MutexField(r.owner), stampArg(r.stamp), millis(r.window), strconv.Itoa(r.further)}
	return runAcquire(ctx, rdb, redissonLockAcquire, keys, args, r)
}

func (mutexPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	res := redissonLockUnlock.Exec(ctx, rdb,
		[]string{k.name, k.channel, compat.UnlockLatch(k.name, r.request), compat.OwnerMarker(k.name, r.owner)},
		append([]string{compat.MutexUnlockMessage, compat.MutexField(r.owner), r.publish, millis(r.latchTTL),
			boolArg(r.abandon), millis(r.markerTTL), stampArg(r.stamp), millis(r.window)}, r.state.writeArgs()...))
	return parseRelease(res)
}

func (mutexPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, _ Mode, publish string) (bool, error) {
	n, err := redissonLockForceUnlock.Exec(ctx, rdb, []string{k.name, k.channel, compat.Fair(k.name).State}, []string{compat.MutexUnlockMessage, publish}).AsInt64()
	if err == nil && n < 0 {
		return false, &policyError{msg: "lock is held as a read-write lock (policy redisson, writer-preferring or phase-fair)"}
	}
	return n == 1, redisError(err)
}

// renewEntry renews like Java's RLock watchdog (the owner's field still
// there, PEXPIRE the hash), but never below the PTTL left: a longer hold of
// the same owner, taken WithLease, may need it.
func (mutexPolicy) renewEntry(k *lockKeys, owner string, _ Mode) ([]string, []string) {
	return []string{k.name}, []string{"m", compat.MutexField(owner), ""}
}

func (mutexPolicy) renewScript() *script.Script { return redissonRenew }

func (mutexPolicy) queued() bool { return false }

func (mutexPolicy) unlockLatch(k *lockKeys, request string) string {
	return compat.UnlockLatch(k.name, request)
}

// signal decodes Java's messages: "1" (a writer left, or a write was
// downgraded) can let every reader in and one writer; "0" (the last reader
// left, or a lock was freed) one waiter of either mode.
func (mutexPolicy) signal(msg string) wakeSignal {
	if msg == compat.ReadUnlockMessage {
		return wakeSignal{readers: true, writer: writerOne}
	}
	return wakeSignal{writer: writerOrAnyMode}
}
