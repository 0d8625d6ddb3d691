package fairrw

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
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
const mutexPolicyName = policyMutex

func (mutexPolicy) name() string { return mutexPolicyName }

func (mutexPolicy) keys(name string) (lockKeys, error) {
	channel, fk := compat.MutexChannel(name), wire.Fair(name)
	if err := validateName(name, channel, wire.OwnerMarker(name, "x"), compat.UnlockLatch(name, "x"), fk.Fence, fk.State, fk.Readers); err != nil {
		return lockKeys{}, err
	}
	return lockKeys{name: name, slot: slotOf(name), Keys: wait.Keys{Channel: channel, Tracked: name, Format: wait.JavaFormat}, fair: fk}, nil
}

func (mutexPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	if r.mode != Write {
		return acquireReply{}, fmt.Errorf("%w: a mutex has no read mode", ErrInvalidOption)
	}
	req := wire.MutexAcquire{RedissonAcquire: wireAcquire(k, r)}
	keys, args := req.Render()
	return runAcquire(ctx, rdb, redissonLockAcquire, keys, args, r)
}

func (mutexPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	req := wire.MutexUnlock{Release: wireRelease(k, r)}
	keys, args := req.Render()
	return parseRelease(redissonLockUnlock.Exec(ctx, rdb, keys, args))
}

func (mutexPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, _ Mode, publish string) (bool, error) {
	req := wire.MutexForceUnlock{Name: k.name, Channel: k.Channel, Keys: k.fair, Publish: publish}
	keys, args := req.Render()
	freed, rwlock, err := wire.DecodeMutexForceUnlock(redissonLockForceUnlock.Exec(ctx, rdb, keys, args))
	if rwlock {
		return false, &policyError{msg: "lock is held as a read-write lock (policy redisson, writer-preferring or phase-fair)"}
	}
	return freed, redisError(err)
}

// renew renews like Java's RLock watchdog (the owner's field still there,
// PEXPIRE the hash), but never below the PTTL left: a longer hold of the
// same owner, taken WithLease, may need it.
func (mutexPolicy) renew(lease time.Duration, holds []renewKey) ([]string, []string) {
	return redissonRenewCall(lease, holds)
}

func (mutexPolicy) renewScript() *script.Script { return redissonRenew }

func (mutexPolicy) queued() bool { return false }

func (mutexPolicy) unlockLatch(k *lockKeys, request string) string {
	return k.fair.UnlockLatch(k.name, request)
}
