package wire

import (
	"strconv"
	"strings"

	"github.com/fairrw/rwlock/internal/compat"
)

// Key prefixes of fairrw's own keys. None is part of Redisson: Java neither
// reads nor writes them, and they never live inside the Redisson hash (Java
// counts its fields). They follow Redisson's brace rule (compat.PrefixName,
// compat.KeyPrefix), so that they share the lock's cluster slot.
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
	return compat.PrefixName(OwnerMarkerPrefix, name) + ":" + owner
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
	return FairPrefix + ":" + strconv.Itoa(len(name)) + ":" + compat.KeyPrefix(name)
}

// Fence returns the key of a lock's last fencing token,
// "fairrw:<len>:{N}:fence". It lives for a second after the token was
// minted: a token is the server's clock in microseconds, or one more than this
// last token while it lives (see mint in lua/common.lua), so no key has to
// outlive the lock.
func Fence(name string) string { return base(name) + ":fence" }

// FairKeys are the keys of a lock under the writer-preferring or phase-fair
// policy (see lua/fair_lib.lua for what each holds), and its last fencing
// token, which every policy keeps. A handle computes them once: every
// request of every policy names some of them (a Redisson acquire refuses a
// name the fair policies hold).
type FairKeys struct {
	State, Readers, Queue, Waiting, Admitted, Channel string
	// Fence is Fence(name).
	Fence string
	// Marker and Latch are the prefixes of the lock's give-up markers
	// (OwnerMarker) and unlock latches (compat.UnlockLatch), which every
	// call renders with its owner or request id: built once per handle,
	// they save each call a concatenation.
	Marker, Latch string
}

// OwnerMarker returns OwnerMarker(name, owner) of the keys' lock name.
func (k *FairKeys) OwnerMarker(name, owner string) string {
	if k.Marker == "" { // keys not made by Fair: a test's request
		return OwnerMarker(name, owner)
	}
	return k.Marker + owner
}

// latch returns latch, the unlock latch a caller built already, or else
// k.UnlockLatch(name, request).
func (k *FairKeys) latch(latch, name, request string) string {
	if latch != "" {
		return latch
	}
	return k.UnlockLatch(name, request)
}

// UnlockLatch returns compat.UnlockLatch(name, request) of the keys' lock
// name.
func (k *FairKeys) UnlockLatch(name, request string) string {
	if k.Latch == "" { // keys not made by Fair: a test's request
		return compat.UnlockLatch(name, request)
	}
	return k.Latch + request
}

// Fair returns the keys of lock name under the fair policies:
// "fairrw:<len>:{N}" and "fairrw:<len>:{N}:readers|queue|waiting|admitted",
// the channel "fairrw:<len>:{N}:wake", and the fence
// "fairrw:<len>:{N}:fence". Distinct names never share one: <len>, the
// name's length in bytes, says where the name ends.
//
// The keys are substrings of one string, which takes one allocation where
// each concatenation took one or two: a handle made for a name used once
// makes them all for one cycle.
func Fair(name string) FairKeys {
	tagged := compat.KeyPrefix(name)
	b := FairPrefix + ":" + strconv.Itoa(len(name)) + ":" + tagged // base(name)
	// The suffixed keys, then the marker and latch prefixes: OwnerMarker
	// and compat.UnlockLatch of "" (compat.PrefixName(p, N) is p + ":" +
	// compat.KeyPrefix(N)).
	markerHead := [...]string{OwnerMarkerPrefix + ":", compat.UnlockLatchPrefix + ":"}
	n := 0
	for _, suffix := range fairSuffixes {
		n += len(b) + len(suffix)
	}
	for _, head := range markerHead {
		n += len(head) + len(tagged) + 1
	}
	var sb strings.Builder
	sb.Grow(n)
	var ends [len(fairSuffixes) + len(markerHead)]int
	for i, suffix := range fairSuffixes {
		sb.WriteString(b)
		sb.WriteString(suffix)
		ends[i] = sb.Len()
	}
	for i, head := range markerHead {
		sb.WriteString(head)
		sb.WriteString(tagged)
		sb.WriteByte(':')
		ends[len(fairSuffixes)+i] = sb.Len()
	}
	all := sb.String()
	var keys [len(ends)]string
	start := 0
	for i, end := range ends {
		keys[i], start = all[start:end], end
	}
	return FairKeys{
		State:    b,
		Readers:  keys[0],
		Queue:    keys[1],
		Waiting:  keys[2],
		Admitted: keys[3],
		Channel:  keys[4],
		Fence:    keys[5],
		Marker:   keys[6],
		Latch:    keys[7],
	}
}

// fairSuffixes are the suffixes of Fair's keys after the state's, in
// FairKeys's order.
var fairSuffixes = [...]string{":readers", ":queue", ":waiting", ":admitted", ":wake", ":fence"}
