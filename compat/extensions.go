package compat

// Key prefixes of fairrw's own keys. None is part of Redisson: Java neither
// reads nor writes them, and they never live inside the Redisson hash.
const (
	// AttemptLatchPrefix starts the name of an acquire attempt's latch.
	AttemptLatchPrefix = "fairrw_attempt"
	// FencePrefix starts the name of a lock's fencing counter.
	FencePrefix = "fairrw_fence"
	// FairPrefix starts the names of the fair policies' keys.
	FairPrefix = "fairrw"
	// WakeChannelPrefix starts the fair policies' wake-up channel.
	WakeChannelPrefix = "fairrw_wake"
)

// AttemptAborted is the value of an attempt latch whose caller gave up: a
// late copy of that attempt must not take the lock. A granted attempt's
// latch holds its fencing token instead, so that a retry reports the grant
// again rather than counting a second hold.
const AttemptAborted = "aborted"

// AttemptLatch returns the latch key of one acquire attempt:
// "fairrw_attempt:{N}:<attempt id>". It makes an acquire idempotent when
// the client retries it after a lost reply, and lets a cancelled Lock undo
// an attempt whose outcome it never learned.
func AttemptLatch(name, attemptID string) string {
	return PrefixName(AttemptLatchPrefix, name) + ":" + attemptID
}

// Fence returns the lock's fencing counter "fairrw_fence:{N}": a plain
// integer, INCR'd by every new write grant, with no TTL, so that it outlives
// the lock and tokens keep increasing across holders.
func Fence(name string) string { return PrefixName(FencePrefix, name) }

// FairKeys are the keys of a lock under the writer-preferring or phase-fair
// policy (see lua/fair_lib.lua for what each holds).
type FairKeys struct {
	State, Readers, Queue, Waiting, Admitted, Channel string
}

// Fair returns the keys of lock name under the fair policies:
// "fairrw:{N}" and "fairrw:{N}:readers|queue|waiting|admitted", and the
// channel "fairrw_wake:{N}".
func Fair(name string) FairKeys {
	base := PrefixName(FairPrefix, name)
	return FairKeys{
		State:    base,
		Readers:  base + ":readers",
		Queue:    base + ":queue",
		Waiting:  base + ":waiting",
		Admitted: base + ":admitted",
		Channel:  PrefixName(WakeChannelPrefix, name),
	}
}
