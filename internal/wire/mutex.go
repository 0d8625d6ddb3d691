package wire

import "github.com/fairrw/rwlock/internal/compat"

// MutexAcquire is lua/redisson_lock_acquire.lua's request: a hold of a
// Redisson RLock (a reentrant mutex; it has no read mode).
type MutexAcquire struct{ RedissonAcquire }

var (
	mutexAcquireKeys = fixed(acquireLockHash, acquireMarker, acquireFairState, acquireFence, acquireFairReads)
	mutexAcquireArgs = fixed(
		acquireLease,
		column[RedissonAcquire]{"owner's field", func(r *RedissonAcquire) string { return compat.MutexField(r.Owner) }},
		acquireStamp, acquireWindow, acquireFurther)
)

// Render returns the script's KEYS and ARGV. Its reply is DecodeAcquire's.
func (r *MutexAcquire) Render() (keys, args []string) {
	return renderBoth(&mutexAcquireKeys, &mutexAcquireArgs, &r.RedissonAcquire)
}

// MutexUnlock is lua/redisson_lock_unlock.lua's request: release one hold
// of an RLock, or give the owner up, and set what it keeps (Kept.Writes
// holds; Kept.Reads is not sent).
type MutexUnlock struct{ Release }

var (
	mutexUnlockKeys = fixed(releaseLockHash, releaseChannel, releaseLatch, releaseMarker)
	mutexUnlockArgs = fixed(
		column[Release]{"message", func(*Release) string { return compat.MutexUnlockMessage }},
		column[Release]{"owner's field", func(r *Release) string { return compat.MutexField(r.Owner) }},
		releasePublish, releaseLatchTTL, releaseAbandon, releaseMarkTTL, releaseStamp, releaseWindow,
		column[Release]{"how many holds", func(r *Release) string { return count(r.Kept.Writes) }},
		releaseLongest)
)

// Render returns the script's KEYS and ARGV. Its reply is DecodeRelease's.
func (r *MutexUnlock) Render() (keys, args []string) {
	return renderBoth(&mutexUnlockKeys, &mutexUnlockArgs, &r.Release)
}

// MutexForceUnlock is lua/redisson_lock_force_unlock.lua's request: free an
// RLock whoever holds it, unless the name is a read-write lock's.
type MutexForceUnlock struct {
	Name    string
	Channel string   // compat.MutexChannel(Name), as the handle keeps it
	Keys    FairKeys // Fair(Name): a fair policy's state there is left alone
	Publish string
}

var (
	mutexForceUnlockKeys = fixed(
		column[MutexForceUnlock]{"lock hash", func(r *MutexForceUnlock) string { return r.Name }},
		column[MutexForceUnlock]{"channel", func(r *MutexForceUnlock) string { return r.Channel }},
		column[MutexForceUnlock]{"fair policies' state", func(r *MutexForceUnlock) string { return r.Keys.State }})
	mutexForceUnlockArgs = fixed(
		column[MutexForceUnlock]{"message", func(*MutexForceUnlock) string { return compat.MutexUnlockMessage }},
		column[MutexForceUnlock]{"publish command", func(r *MutexForceUnlock) string { return r.Publish }})
)

// Render returns the script's KEYS and ARGV. Its reply is
// DecodeMutexForceUnlock's.
func (r *MutexForceUnlock) Render() (keys, args []string) {
	return renderBoth(&mutexForceUnlockKeys, &mutexForceUnlockArgs, r)
}
