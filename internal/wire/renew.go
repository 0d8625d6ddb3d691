package wire

import (
	"time"

	"github.com/fairrw/rwlock/internal/compat"
)

// FairRenew is lua/fair_renew.lua's request: renew many holds of one client
// under a fair policy, in one call (every key in one slot on a cluster).
type FairRenew struct {
	// Lease is how long each hold lasts from now, as a hold time.
	Lease time.Duration
	Holds []FairRenewHold
}

// FairRenewHold is one hold of a FairRenew.
type FairRenewHold struct {
	Keys  FairKeys // Fair of the lock's name
	Mode  Mode
	Owner string
}

var (
	fairRenewKeys = layout[FairRenew, FairRenewHold]{
		each: []column[FairRenewHold]{
			{"state hash", func(h *FairRenewHold) string { return h.Keys.State }},
			{"readers zset", func(h *FairRenewHold) string { return h.Keys.Readers }},
		},
		entries: func(r *FairRenew) []FairRenewHold { return r.Holds },
	}
	fairRenewArgs = layout[FairRenew, FairRenewHold]{
		head: []column[FairRenew]{{"lease", func(r *FairRenew) string { return HoldMillis(r.Lease) }}},
		each: []column[FairRenewHold]{
			{"mode", func(h *FairRenewHold) string { return h.Mode.letter() }},
			{"owner", func(h *FairRenewHold) string { return h.Owner }},
		},
		entries: func(r *FairRenew) []FairRenewHold { return r.Holds },
	}
)

// Render returns the script's KEYS and ARGV. Its reply is DecodeRenew's.
func (r *FairRenew) Render() (keys, args []string) {
	return renderBoth(&fairRenewKeys, &fairRenewArgs, r)
}

// RedissonRenew is lua/redisson_renew.lua's request: renew many holds of
// one client on Redisson's format (read-write locks and RLocks alike), in
// one call (every key in one slot on a cluster).
type RedissonRenew struct {
	// Lease is how long each hold lasts from now, as a hold time.
	Lease time.Duration
	Holds []RedissonRenewHold
}

// RedissonRenewHold is one hold of a RedissonRenew: an owner's holds of one
// mode of a read-write lock, or of an RLock (RLock).
type RedissonRenewHold struct {
	Name  string
	Owner string
	Mode  Mode // of a read-write lock
	RLock bool // an RLock's holds (Mode is not sent)
}

// kind renders what the script renews: "m" an RLock's holds, "w" a write,
// "r" reads.
func (h *RedissonRenewHold) kind() string {
	if h.RLock {
		return "m"
	}
	return h.Mode.letter()
}

// field renders the owner's hash field of the hold.
func (h *RedissonRenewHold) field() string {
	switch {
	case h.RLock:
		return compat.MutexField(h.Owner)
	case h.Mode == Read:
		return compat.ReadField(h.Owner)
	default:
		return compat.WriteField(h.Owner)
	}
}

// leasePrefix renders the prefix of a read's lease keys, "" for any other
// hold.
func (h *RedissonRenewHold) leasePrefix() string {
	if h.RLock || h.Mode != Read {
		return ""
	}
	return compat.LeaseKeyPrefix(h.Name, h.Owner)
}

var (
	redissonRenewKeys = layout[RedissonRenew, RedissonRenewHold]{
		each:    []column[RedissonRenewHold]{{"lock hash", func(h *RedissonRenewHold) string { return h.Name }}},
		entries: func(r *RedissonRenew) []RedissonRenewHold { return r.Holds },
	}
	redissonRenewArgs = layout[RedissonRenew, RedissonRenewHold]{
		head: []column[RedissonRenew]{{"lease", func(r *RedissonRenew) string { return HoldMillis(r.Lease) }}},
		each: []column[RedissonRenewHold]{
			{"kind", (*RedissonRenewHold).kind},
			{"hash field", (*RedissonRenewHold).field},
			{"lease-key prefix", (*RedissonRenewHold).leasePrefix},
		},
		entries: func(r *RedissonRenew) []RedissonRenewHold { return r.Holds },
	}
)

// Render returns the script's KEYS and ARGV. Its reply is DecodeRenew's.
func (r *RedissonRenew) Render() (keys, args []string) {
	return renderBoth(&redissonRenewKeys, &redissonRenewArgs, r)
}
