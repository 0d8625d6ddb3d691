package wire

import (
	"time"

	"github.com/fairrw/rwlock/internal/compat"
)

// RedissonAcquire is what an acquire on Redisson's format takes: a
// read-write lock's read (RedissonReadAcquire) or write
// (RedissonWriteAcquire), or an RLock's hold (MutexAcquire). Besides Java's
// keys, each script takes fairrw's: the owner's give-up marker, the fence,
// and the fair policies' state and readers (to refuse a name they hold).
type RedissonAcquire struct {
	// Name is the lock name N, the Redisson hash.
	Name string
	// Keys is Fair(Name), as the handle keeps it.
	Keys FairKeys
	// Owner is "<client UUID>:<owner id>".
	Owner string
	// Lease is how long the hold lasts, as a hold time.
	Lease time.Duration
	// Stamp and Window: Redis refuses a copy that arrives more than Window
	// after Stamp (lua/common.lua).
	Stamp  time.Time
	Window time.Duration
	// Further > 0 takes a further hold and makes Further the owner's count
	// of holds; 0 is a first hold.
	Further int
}

// The columns every acquire on Redisson's format shares.
var (
	acquireLockHash  = column[RedissonAcquire]{"lock hash", func(r *RedissonAcquire) string { return r.Name }}
	acquireMarker    = column[RedissonAcquire]{"give-up marker", func(r *RedissonAcquire) string { return r.Keys.OwnerMarker(r.Name, r.Owner) }}
	acquireFairState = column[RedissonAcquire]{"fair policies' state", func(r *RedissonAcquire) string { return r.Keys.State }}
	acquireFence     = column[RedissonAcquire]{"fencing token", func(r *RedissonAcquire) string { return r.Keys.Fence }}
	acquireFairReads = column[RedissonAcquire]{"fair policies' readers", func(r *RedissonAcquire) string { return r.Keys.Readers }}
	acquireLease     = column[RedissonAcquire]{"lease", func(r *RedissonAcquire) string { return HoldMillis(r.Lease) }}
	acquireStamp     = column[RedissonAcquire]{"stamp", func(r *RedissonAcquire) string { return stamp(r.Stamp) }}
	acquireWindow    = column[RedissonAcquire]{"window", func(r *RedissonAcquire) string { return millis(r.Window) }}
	acquireFurther   = column[RedissonAcquire]{"further", func(r *RedissonAcquire) string { return count(r.Further) }}
)

// RedissonReadAcquire is lua/redisson_read_acquire.lua's request.
type RedissonReadAcquire struct{ RedissonAcquire }

var (
	redissonReadAcquireKeys = fixed(
		acquireLockHash,
		column[RedissonAcquire]{"lease-key prefix", func(r *RedissonAcquire) string { return compat.LeaseKeyPrefix(r.Name, r.Owner) }},
		acquireMarker, acquireFairState, acquireFence, acquireFairReads)
	redissonReadAcquireArgs = fixed(
		acquireLease,
		column[RedissonAcquire]{"read field", func(r *RedissonAcquire) string { return compat.ReadField(r.Owner) }},
		column[RedissonAcquire]{"write field", func(r *RedissonAcquire) string { return compat.WriteField(r.Owner) }},
		acquireStamp, acquireWindow, acquireFurther)
)

// Render returns the script's KEYS and ARGV. Its reply is DecodeAcquire's.
func (r *RedissonReadAcquire) Render() (keys, args []string) {
	return renderBoth(&redissonReadAcquireKeys, &redissonReadAcquireArgs, &r.RedissonAcquire)
}

// RedissonWriteAcquire is lua/redisson_write_acquire.lua's request.
type RedissonWriteAcquire struct{ RedissonAcquire }

var (
	redissonWriteAcquireKeys = fixed(acquireLockHash, acquireMarker, acquireFairState, acquireFence, acquireFairReads)
	redissonWriteAcquireArgs = fixed(
		acquireLease,
		column[RedissonAcquire]{"write field", func(r *RedissonAcquire) string { return compat.WriteField(r.Owner) }},
		acquireStamp, acquireWindow, acquireFurther)
)

// Render returns the script's KEYS and ARGV. Its reply is DecodeAcquire's.
func (r *RedissonWriteAcquire) Render() (keys, args []string) {
	return renderBoth(&redissonWriteAcquireKeys, &redissonWriteAcquireArgs, &r.RedissonAcquire)
}

// Release is what a release on Redisson's format takes: a read-write
// lock's (RedissonUnlock) or an RLock's (MutexUnlock).
type Release struct {
	// Name is the lock name N, the Redisson hash.
	Name string
	// Channel is the lock's channel (compat.Channel or compat.MutexChannel
	// of Name), as the handle keeps it.
	Channel string
	// Owner is "<client UUID>:<owner id>".
	Owner string
	// Request is the unlock request id (32 hex digits), which names the
	// latch that answers a retry; LatchTTL is how long the latch is kept.
	// Latch, when set, is that latch's key, compat.UnlockLatch(Name,
	// Request), which the caller built once for every try and its clean-up.
	Request  string
	Latch    string
	LatchTTL time.Duration
	// Keys is Fair(Name), as the handle keeps it, when the caller has it:
	// its prefixes save building the marker's and the latch's names.
	Keys FairKeys
	// Publish is compat.Publish or compat.SPublish.
	Publish string
	// Abandon gives the owner up: its marker is set for MarkerTTL.
	Abandon   bool
	MarkerTTL time.Duration
	// Stamp and Window: Redis ignores a copy that arrives more than Window
	// after Stamp (lua/common.lua).
	Stamp  time.Time
	Window time.Duration
	// Kept is what the owner still holds (of an RLock: Kept.Writes holds).
	Kept Kept
}

// The columns every release on Redisson's format shares.
var (
	releaseLockHash = column[Release]{"lock hash", func(r *Release) string { return r.Name }}
	releaseChannel  = column[Release]{"channel", func(r *Release) string { return r.Channel }}
	releaseLatch    = column[Release]{"unlock latch", func(r *Release) string { return r.Keys.latch(r.Latch, r.Name, r.Request) }}
	releaseMarker   = column[Release]{"give-up marker", func(r *Release) string { return r.Keys.OwnerMarker(r.Name, r.Owner) }}
	releasePublish  = column[Release]{"publish command", func(r *Release) string { return r.Publish }}
	releaseLatchTTL = column[Release]{"latch lifetime", func(r *Release) string { return millis(r.LatchTTL) }}
	releaseAbandon  = column[Release]{"given up", func(r *Release) string { return flag(r.Abandon) }}
	releaseMarkTTL  = column[Release]{"marker's lifetime", func(r *Release) string { return millis(r.MarkerTTL) }}
	releaseStamp    = column[Release]{"stamp", func(r *Release) string { return stamp(r.Stamp) }}
	releaseWindow   = column[Release]{"window", func(r *Release) string { return millis(r.Window) }}
	releaseLongest  = column[Release]{"longest", func(r *Release) string { return r.Kept.writeLeft() }}
)

// RedissonUnlock is lua/redisson_unlock.lua's request: release one hold of
// Mode of a read-write lock, or give the owner up, and set what it keeps.
type RedissonUnlock struct {
	Release
	Mode Mode
}

var (
	redissonUnlockKeys = fixed(prefixed((*RedissonUnlock).release, []column[Release]{
		releaseLockHash, releaseChannel,
		{"lease-key prefix", func(r *Release) string { return compat.LeaseKeyPrefix(r.Name, r.Owner) }},
		{"key prefix", func(r *Release) string { return compat.KeyPrefix(r.Name) }},
		releaseLatch, releaseMarker,
	})...)
	redissonUnlockArgs = layout[RedissonUnlock, time.Duration]{
		head: append([]column[RedissonUnlock]{
			{"mode", func(r *RedissonUnlock) string { return r.Mode.letter() }},
		}, prefixed((*RedissonUnlock).release, []column[Release]{
			{"read field", func(r *Release) string { return compat.ReadField(r.Owner) }},
			{"write field", func(r *Release) string { return compat.WriteField(r.Owner) }},
			releasePublish, releaseLatchTTL, releaseAbandon, releaseMarkTTL, releaseStamp, releaseWindow,
			{"write holds", func(r *Release) string { return count(r.Kept.Writes) }},
			releaseLongest,
		})...),
		each:    []column[time.Duration]{{"read hold", func(d *time.Duration) string { return HoldMillis(*d) }}},
		entries: func(r *RedissonUnlock) []time.Duration { return r.Kept.Reads },
	}
)

func (r *RedissonUnlock) release() *Release { return &r.Release }

// Render returns the script's KEYS and ARGV. Its reply is DecodeRelease's.
func (r *RedissonUnlock) Render() (keys, args []string) {
	return renderBoth(&redissonUnlockKeys, &redissonUnlockArgs, r)
}

// RedissonForceUnlock is lua/redisson_force_unlock.lua's request: free a
// read-write lock held in Mode, whoever holds it.
type RedissonForceUnlock struct {
	Name    string
	Channel string // compat.Channel(Name), as the handle keeps it
	Mode    Mode
	Publish string
}

var (
	redissonForceUnlockKeys = fixed(
		column[RedissonForceUnlock]{"lock hash", func(r *RedissonForceUnlock) string { return r.Name }},
		column[RedissonForceUnlock]{"channel", func(r *RedissonForceUnlock) string { return r.Channel }})
	redissonForceUnlockArgs = fixed(
		column[RedissonForceUnlock]{"mode to free", func(r *RedissonForceUnlock) string {
			if r.Mode == Write {
				return compat.ModeWrite
			}
			return compat.ModeRead
		}},
		column[RedissonForceUnlock]{"message", func(r *RedissonForceUnlock) string {
			if r.Mode == Write {
				return compat.ReadUnlockMessage
			}
			return compat.UnlockMessage
		}},
		column[RedissonForceUnlock]{"publish command", func(r *RedissonForceUnlock) string { return r.Publish }})
)

// Render returns the script's KEYS and ARGV. Its reply is
// DecodeForceUnlock's.
func (r *RedissonForceUnlock) Render() (keys, args []string) {
	return renderBoth(&redissonForceUnlockKeys, &redissonForceUnlockArgs, r)
}
