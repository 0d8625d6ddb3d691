package wire

import (
	"strconv"
	"time"
)

// FairCall is what every fair script takes first: KEYS[1..9] and
// ARGV[1..8] of lua/fair_lib.lua.
type FairCall struct {
	// Name is the lock name N, which is also the Redisson hash the script
	// checks, to refuse a name held under that policy.
	Name string
	// Keys is Fair(Name), as the handle keeps it.
	Keys FairKeys
	// Policy is "writer-preferring" or "phase-fair": the rule to apply,
	// recorded in the lock's state with the protocol (PolicyRecord).
	Policy string
	// Protocol is the protocol the state records; 0 is Protocol. Only
	// tests speak another, to check that two protocols never share a lock.
	Protocol int
	// Record, when set, is PolicyRecord of Policy and Protocol, rendered
	// once by the caller rather than on every call.
	Record string
	Mode   Mode
	// Owner is "<client UUID>:<owner id>".
	Owner string
	// Lease is how long an acquire's hold lasts. A release moves the
	// state's expiry by it when the owner keeps a write (fairrw sends the
	// queue lease there).
	Lease time.Duration
	// Queue is how long a waiter's entry lives unless it tries again.
	Queue time.Duration
	// Stamp is when the call was first sent (the client's clock); Redis
	// refuses a copy that arrives more than Window later (lua/common.lua).
	Stamp  time.Time
	Window time.Duration
	// Publish is compat.Publish or compat.SPublish.
	Publish string
}

// record is what the lock's state records: the policy and the protocol.
func (r *FairCall) record() string {
	if r.Record != "" {
		return r.Record
	}
	if r.Protocol == 0 {
		return PolicyRecord(r.Policy, Protocol)
	}
	return PolicyRecord(r.Policy, r.Protocol)
}

// fairLibKeys and fairLibArgs are lua/fair_lib.lua's KEYS[1..9] and
// ARGV[1..8], which every fair script takes first.
var (
	fairLibKeys = []column[FairCall]{
		{"state hash", func(r *FairCall) string { return r.Keys.State }},
		{"readers zset", func(r *FairCall) string { return r.Keys.Readers }},
		{"waiting writers", func(r *FairCall) string { return r.Keys.Queue }},
		{"waiting readers", func(r *FairCall) string { return r.Keys.Waiting }},
		{"admitted", func(r *FairCall) string { return r.Keys.Admitted }},
		{"fencing token", func(r *FairCall) string { return r.Keys.Fence }},
		{"wake-up channel", func(r *FairCall) string { return r.Keys.Channel }},
		{"Redisson hash", func(r *FairCall) string { return r.Name }},
		{"give-up marker", func(r *FairCall) string { return r.Keys.OwnerMarker(r.Name, r.Owner) }},
	}
	fairLibArgs = []column[FairCall]{
		{"policy", func(r *FairCall) string { return r.record() }},
		{"mode", func(r *FairCall) string { return r.Mode.letter() }},
		{"owner", func(r *FairCall) string { return r.Owner }},
		{"lease in milliseconds", func(r *FairCall) string { return HoldMillis(r.Lease) }},
		{"queue lease", func(r *FairCall) string { return HoldMillis(r.Queue) }},
		{"stamp", func(r *FairCall) string { return stamp(r.Stamp) }},
		{"window", func(r *FairCall) string { return millis(r.Window) }},
		{"publish command", func(r *FairCall) string { return r.Publish }},
	}
)

// FairAcquire is lua/fair_acquire.lua's request (composed after its fast
// path, lua/fair_acquire_fast.lua, which takes the same).
type FairAcquire struct {
	FairCall
	// Wait queues the owner up when refused (Lock, RLock; not Try*).
	Wait bool
	// Further > 0 takes a further hold of an owner that holds already and
	// makes Further its count of holds in Mode; 0 is a first hold.
	Further int
	// Notify asks, when refused without queueing, to be told when the way
	// is clear (a quorum Lock's round).
	Notify bool
	// Reserve is how many tokens a write granted by this attempt reserves,
	// its own included, up to TokenReserve (0 or 1: the token alone): a
	// cohort's leader whose Client may pass the write on asks for them.
	Reserve int
}

var (
	fairAcquireKeys = fixed(prefixed((*FairAcquire).lib, fairLibKeys)...)
	fairAcquireArgs = fixed(append(prefixed((*FairAcquire).lib, fairLibArgs),
		column[FairAcquire]{"queue up", func(r *FairAcquire) string { return flag(r.Wait) }},
		column[FairAcquire]{"further hold", func(r *FairAcquire) string { return count(r.Further) }},
		column[FairAcquire]{"tell this waiter", func(r *FairAcquire) string { return flag(r.Notify) }},
		column[FairAcquire]{"tokens a write granted by this attempt reserves", func(r *FairAcquire) string { return count(max(r.Reserve, 1)) }},
	)...)
)

func (r *FairAcquire) lib() *FairCall { return &r.FairCall }

// Render returns the script's KEYS and ARGV. Its reply is DecodeAcquire's.
func (r *FairAcquire) Render() (keys, args []string) {
	return renderBoth(&fairAcquireKeys, &fairAcquireArgs, r)
}

// Kept is what an owner still holds after a release, as the release scripts
// set it: fairrw counts the owner's live holds itself.
type Kept struct {
	Writes int
	// WriteLeft is how long the longest of the writes has left.
	WriteLeft time.Duration
	// Reads is how long each read has left, the longest first.
	Reads []time.Duration
}

// writeLeft renders WriteLeft as a hold time, "0" when no write is kept.
func (k *Kept) writeLeft() string {
	if k.Writes == 0 {
		return "0"
	}
	return HoldMillis(k.WriteLeft)
}

// readLeft renders the longest read's time left as a hold time (that of
// 0 when none is kept: the script reads it only when some is).
func (k *Kept) readLeft() string {
	if len(k.Reads) == 0 {
		return HoldMillis(0)
	}
	return HoldMillis(k.Reads[0])
}

// FairUnlock is lua/fair_unlock.lua's request: release one hold
// of Mode, or give the owner up (Abandon), and set what it keeps.
type FairUnlock struct {
	FairCall
	// Request is the unlock request id (32 hex digits), which names the
	// latch that answers a retry.
	Request string
	// Latch, when set, is that latch's key, UnlockLatch(Name, Request),
	// which the caller built once for every try and its clean-up.
	Latch string
	// LatchTTL is how long the latch is kept.
	LatchTTL time.Duration
	// Abandon gives the owner up: its marker is set for MarkerTTL and its
	// queue entries go.
	Abandon   bool
	MarkerTTL time.Duration
	Kept      Kept
	// MayRead says the owner may hold reads in Redis (it was granted one,
	// or this releases or gives up a read); false spares looking.
	MayRead bool
	// Passed is the highest fencing token the owner's Client handed out
	// under the owner's write, passing it within a cohort (0: none): the
	// last token a read then gets.
	Passed uint64
	// Successor, when set, is an owner queued as a writer before the hold
	// is released (its Client's cohort's next leader), with an entry of a
	// queue lease (FairCall.Queue).
	Successor string
}

var (
	fairUnlockKeys = fixed(append(prefixed((*FairUnlock).lib, fairLibKeys),
		column[FairUnlock]{"unlock latch", func(r *FairUnlock) string { return r.Keys.latch(r.Latch, r.Name, r.Request) }},
		column[FairUnlock]{"successor's give-up marker", func(r *FairUnlock) string { return r.Keys.OwnerMarker(r.Name, r.Successor) }},
	)...)
	fairUnlockArgs = fixed(append(prefixed((*FairUnlock).lib, fairLibArgs),
		column[FairUnlock]{"latch lifetime", func(r *FairUnlock) string { return millis(r.LatchTTL) }},
		column[FairUnlock]{"give the owner up", func(r *FairUnlock) string { return flag(r.Abandon) }},
		column[FairUnlock]{"marker's lifetime", func(r *FairUnlock) string { return millis(r.MarkerTTL) }},
		column[FairUnlock]{"write holds", func(r *FairUnlock) string { return count(r.Kept.Writes) }},
		column[FairUnlock]{"longest write", func(r *FairUnlock) string { return r.Kept.writeLeft() }},
		column[FairUnlock]{"read holds", func(r *FairUnlock) string { return count(len(r.Kept.Reads)) }},
		column[FairUnlock]{"longest read", func(r *FairUnlock) string { return r.Kept.readLeft() }},
		column[FairUnlock]{"may hold reads", func(r *FairUnlock) string { return flag(r.MayRead) }},
		column[FairUnlock]{"highest token passed", func(r *FairUnlock) string { return strconv.FormatUint(r.Passed, 10) }},
		column[FairUnlock]{"successor", func(r *FairUnlock) string { return r.Successor }},
	)...)
)

func (r *FairUnlock) lib() *FairCall { return &r.FairCall }

// Render returns the script's KEYS and ARGV. Its reply is
// DecodeFairUnlock's.
func (r *FairUnlock) Render() (keys, args []string) {
	return renderBoth(&fairUnlockKeys, &fairUnlockArgs, r)
}

// FairUnlockFast is lua/fair_unlock_fast.lua's request: an owner's last
// release of a hold the fast path granted, sent with only the keys and
// values it needs (a script's cost on the server grows with them).
type FairUnlockFast struct {
	Name  string
	Keys  FairKeys
	Mode  Mode
	Owner string
	// Request is the unlock request id: fair_unlock, sent when this does not
	// apply, uses the same, and so the same latch. Latch, when set, is that
	// latch's key (as FairUnlock's).
	Request  string
	Latch    string
	LatchTTL time.Duration
}

var (
	fairUnlockFastKeys = fixed(
		column[FairUnlockFast]{"state hash", func(r *FairUnlockFast) string { return r.Keys.State }},
		column[FairUnlockFast]{"readers zset", func(r *FairUnlockFast) string { return r.Keys.Readers }},
		column[FairUnlockFast]{"unlock latch", func(r *FairUnlockFast) string { return r.Keys.latch(r.Latch, r.Name, r.Request) }},
	)
	fairUnlockFastArgs = fixed(
		column[FairUnlockFast]{"mode", func(r *FairUnlockFast) string { return r.Mode.letter() }},
		column[FairUnlockFast]{"owner", func(r *FairUnlockFast) string { return r.Owner }},
		column[FairUnlockFast]{"latch's lifetime", func(r *FairUnlockFast) string { return millis(r.LatchTTL) }},
	)
)

// Render returns the script's KEYS and ARGV. Its reply is
// DecodeFairUnlockFast's.
func (r *FairUnlockFast) Render() (keys, args []string) {
	return renderBoth(&fairUnlockFastKeys, &fairUnlockFastArgs, r)
}

// FairForceUnlock is lua/fair_force_unlock.lua's request: free the lock's
// holders of Mode. Only Name, Keys, Policy, Mode and Publish of FairCall
// are sent: the script reads the rest as fair_lib.lua's (load), but a force
// unlock has no owner, takes no hold and is never stale, so they go as
// fixed values.
type FairForceUnlock struct {
	FairCall
}

var (
	fairForceUnlockKeys = fixed(prefixed((*FairForceUnlock).lib, fairLibKeys)...)
	fairForceUnlockArgs = fixed(
		column[FairForceUnlock]{"policy", func(r *FairForceUnlock) string { return r.record() }},
		column[FairForceUnlock]{"mode", func(r *FairForceUnlock) string { return r.Mode.letter() }},
		column[FairForceUnlock]{"owner", func(*FairForceUnlock) string { return "" }},
		column[FairForceUnlock]{"lease in milliseconds", func(*FairForceUnlock) string { return "1" }},
		column[FairForceUnlock]{"queue lease", func(*FairForceUnlock) string { return "1" }},
		column[FairForceUnlock]{"stamp", func(*FairForceUnlock) string { return "0" }},
		column[FairForceUnlock]{"window", func(*FairForceUnlock) string { return "1" }},
		column[FairForceUnlock]{"publish command", func(r *FairForceUnlock) string { return r.Publish }},
	)
)

// lib is the FairCall whose keys are sent: that of no owner (the marker
// "fairrw_attempt:{N}:", which no owner has).
func (r *FairForceUnlock) lib() *FairCall {
	c := r.FairCall
	c.Owner = ""
	return &c
}

// Render returns the script's KEYS and ARGV. Its reply is
// DecodeForceUnlock's.
func (r *FairForceUnlock) Render() (keys, args []string) {
	return renderBoth(&fairForceUnlockKeys, &fairForceUnlockArgs, r)
}
