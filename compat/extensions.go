package compat

import "strconv"

// Key prefixes of fairrw's own keys. None is part of Redisson: Java neither
// reads nor writes them, and they never live inside the Redisson hash.
const (
	// OwnerMarkerPrefix starts the name of a given-up owner's marker.
	OwnerMarkerPrefix = "fairrw_attempt"
	// FairPrefix starts the names of fairrw's per-lock keys: the fair
	// policies' state and the fencing token of every policy.
	FairPrefix = "fairrw"
)

// OwnerMarker returns the key that marks an owner whose acquire was given
// up: "fairrw_attempt:{N}:<owner>". While it exists no copy of that owner's
// attempts, however late it reaches Redis, takes the lock; it lives as long
// as such a copy could still be accepted (see lua/redisson_lib.lua).
// Owners are unique, so two names that share it ("x" and "{x}") never
// share a marker.
func OwnerMarker(name, owner string) string {
	return PrefixName(OwnerMarkerPrefix, name) + ":" + owner
}

// base is the prefix of every fairrw key of lock name:
// "fairrw:<length of N>:" followed by N in the brace rule's form ("{N}"
// when N has no brace, N itself otherwise). The length makes the names
// injective: "x" and "{x}" have the bases "fairrw:1:{x}" and
// "fairrw:3:{x}", and a name can never end where another name's suffix
// begins ("{orders}:readers" is not "{orders}" plus ":readers"), because the
// length says where the name ends. The brace rule keeps every key in the
// name's cluster slot: the length has no braces.
func base(name string) string {
	return FairPrefix + ":" + strconv.Itoa(len(name)) + ":" + KeyPrefix(name)
}

// Fence returns the key of a lock's last fencing token,
// "fairrw:<len>:{N}:fence". It lives for a second after the token was
// minted: a token is the server's clock in microseconds, or one more than this
// last token while it lives (see mint in lua/common.lua), so no key has to
// outlive the lock.
func Fence(name string) string { return base(name) + ":fence" }

// FairKeys are the keys of a lock under the writer-preferring or phase-fair
// policy (see lua/fair_lib.lua for what each holds).
type FairKeys struct {
	State, Readers, Queue, Waiting, Admitted, Channel string
}

// Fair returns the keys of lock name under the fair policies:
// "fairrw:<len>:{N}" and "fairrw:<len>:{N}:readers|queue|waiting|admitted",
// and the channel "fairrw:<len>:{N}:wake". Distinct names never share one:
// <len>, the name's length in bytes, says where the name ends.
func Fair(name string) FairKeys {
	b := base(name)
	return FairKeys{
		State:    b,
		Readers:  b + ":readers",
		Queue:    b + ":queue",
		Waiting:  b + ":waiting",
		Admitted: b + ":admitted",
		Channel:  b + ":wake",
	}
}
