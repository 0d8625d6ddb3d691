package compat

import (
	"strconv"
	"strings"
)

// Field and message values of the Redisson read-write lock hash and channel.
const (
	// ModeField is the hash field that holds the lock's mode.
	ModeField = "mode"
	// ModeRead is the value of ModeField while readers hold the lock.
	ModeRead = "read"
	// ModeWrite is the value of ModeField while a writer holds the lock.
	ModeWrite = "write"
	// UnlockMessage is published when the last reader leaves or on a read
	// force-unlock. Java wakes one waiter per client on it.
	UnlockMessage = "0"
	// ReadUnlockMessage is published when a writer releases (or on a write
	// force-unlock). Java wakes every waiter of a client on it.
	ReadUnlockMessage = "1"
	// WriteSuffix ends the hash field of a write holder: "<client>:<owner>:write".
	WriteSuffix = ":write"
	// LeaseKeySuffix ends the per-read-hold lease key prefix.
	LeaseKeySuffix = ":rwlock_timeout"
	// ChannelPrefix starts the lock's pub/sub channel name.
	ChannelPrefix = "redisson_rwlock"
	// UnlockLatchPrefix starts the name of an unlock's latch key.
	UnlockLatchPrefix = "redisson_unlock_latch"
)

// Publish commands a script may be told to publish with. Java publishes
// with PUBLISH on a single node and SPUBLISH on a Redis 7+ cluster.
const (
	Publish  = "publish"
	SPublish = "spublish"
)

// Owner returns the owner identity Redisson writes in the hash:
// "<client UUID>:<owner id>". Java's owner id is a thread id.
func Owner(clientID string, ownerID uint64) string {
	// Built in one buffer: one allocation where the concatenation of
	// FormatUint's string made two (every acquire makes an owner).
	var b [64]byte
	buf := append(append(b[:0], clientID...), ':')
	return string(strconv.AppendUint(buf, ownerID, 10))
}

// ReadField returns the hash field counting owner's read holds.
func ReadField(owner string) string { return owner }

// WriteField returns the hash field counting owner's write holds.
func WriteField(owner string) string { return owner + WriteSuffix }

// SuffixName joins a lock name and a suffix the way Redisson does: when the
// name already contains '{' it is used as is ("N:suffix"), otherwise it is
// wrapped in braces ("{N}:suffix") so that the result hashes to the same
// cluster slot as the name itself.
func SuffixName(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// PrefixName joins a prefix and a lock name the way Redisson does:
// "prefix:N" when the name contains '{', otherwise "prefix:{N}".
func PrefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// KeyPrefix returns the prefix Redisson passes to its scripts to rebuild the
// lease keys of every owner: "{N}" (or N itself when it contains '{').
func KeyPrefix(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// Channel returns the lock's pub/sub channel: "redisson_rwlock:{N}".
func Channel(name string) string { return PrefixName(ChannelPrefix, name) }

// LeaseKeyPrefix returns the prefix of owner's per-read-hold lease keys:
// "{N}:<owner>:rwlock_timeout". Hold K (1-based) has the key prefix+":K".
func LeaseKeyPrefix(name, owner string) string {
	return SuffixName(name, owner) + LeaseKeySuffix
}

// LeaseKey returns the lease key of owner's read hold number k (1-based).
func LeaseKey(name, owner string, k int) string {
	return LeaseKeyPrefix(name, owner) + ":" + strconv.Itoa(k)
}

// UnlockLatch returns the latch key that makes an unlock idempotent:
// "redisson_unlock_latch:{N}:<request id>", request id being 32 hex digits.
func UnlockLatch(name, requestID string) string {
	return PrefixName(UnlockLatchPrefix, name) + ":" + requestID
}
