package fairrw

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
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
	fk := wire.Fair(name)
	if err := validateName(name, compat.Channel(name), compat.SuffixName(name, "x"), wire.OwnerMarker(name, "x"), fk.Fence, fk.State, fk.Readers); err != nil {
		return lockKeys{}, err
	}
	return lockKeys{name: name, slot: slotOf(name), Keys: wait.Keys{Channel: compat.Channel(name), Tracked: name, Format: wait.JavaFormat}, fair: fk}, nil
}

// wireAcquire is what every acquire on Redisson's format takes (the RLock's
// too).
func wireAcquire(k *lockKeys, r *acquireRequest) wire.RedissonAcquire {
	return wire.RedissonAcquire{Name: k.name, Keys: k.fair, Owner: r.owner, Lease: r.lease, Stamp: r.stamp, Window: r.window, Further: r.further}
}

func (redissonPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	if r.mode == Read {
		req := wire.RedissonReadAcquire{RedissonAcquire: wireAcquire(k, r)}
		keys, args := req.Render()
		return runAcquire(ctx, rdb, redissonReadAcquire, keys, args, r)
	}
	req := wire.RedissonWriteAcquire{RedissonAcquire: wireAcquire(k, r)}
	keys, args := req.Render()
	return runAcquire(ctx, rdb, redissonWriteAcquire, keys, args, r)
}

// wireRelease is what every release on Redisson's format takes (the
// RLock's too).
func wireRelease(k *lockKeys, r *releaseRequest) wire.Release {
	return wire.Release{Name: k.name, Channel: k.Channel, Keys: k.fair, Owner: r.owner, Request: r.request, Latch: r.latch, LatchTTL: r.latchTTL, Publish: r.publish,
		Abandon: r.abandon, MarkerTTL: r.markerTTL, Stamp: r.stamp, Window: r.window, Kept: r.state.kept()}
}

func (redissonPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	req := wire.RedissonUnlock{Release: wireRelease(k, r), Mode: wire.Mode(r.mode)}
	keys, args := req.Render()
	return parseRelease(redissonUnlock.Exec(ctx, rdb, keys, args))
}

func (redissonPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	req := wire.RedissonForceUnlock{Name: k.name, Channel: k.Channel, Mode: wire.Mode(mode), Publish: publish}
	keys, args := req.Render()
	freed, err := wire.DecodeForceUnlock(redissonForceUnlock.Exec(ctx, rdb, keys, args))
	return freed, redisError(err)
}

func (redissonPolicy) renew(lease time.Duration, holds []renewKey) ([]string, []string) {
	return redissonRenewCall(lease, holds)
}

// redissonRenewCall renders a call of lua/redisson_renew.lua, which renews
// a Client's read-write locks and its Mutexes alike: one batch holds both
// (the renewal groups holds by script), so each hold says which it is.
func redissonRenewCall(lease time.Duration, holds []renewKey) ([]string, []string) {
	req := wire.RedissonRenew{Lease: lease, Holds: make([]wire.RedissonRenewHold, len(holds))}
	for i, h := range holds {
		req.Holds[i] = wire.RedissonRenewHold{Name: h.keys.name, Owner: h.owner, Mode: wire.Mode(h.mode), RLock: h.mutex}
	}
	return req.Render()
}

func (redissonPolicy) queued() bool { return false }

func (redissonPolicy) renewScript() *script.Script { return redissonRenew }

func (redissonPolicy) unlockLatch(k *lockKeys, request string) string {
	return k.fair.UnlockLatch(k.name, request)
}
