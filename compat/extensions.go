package compat

// AttemptLatchPrefix starts the name of fairrw's acquire-attempt latch. It is
// not part of Redisson: Java neither reads nor writes it.
const AttemptLatchPrefix = "fairrw_attempt"

// Values of an attempt latch.
const (
	// AttemptGranted marks an attempt that was granted: a retry of it
	// reports the grant again instead of counting a second hold.
	AttemptGranted = "granted"
	// AttemptAborted marks an attempt its caller gave up on: a late copy of
	// it must not take the lock.
	AttemptAborted = "aborted"
)

// AttemptLatch returns the latch key of one acquire attempt:
// "fairrw_attempt:{N}:<attempt id>". It makes an acquire idempotent when
// the client retries it after a lost reply, and lets a cancelled Lock undo
// an attempt whose outcome it never learned.
func AttemptLatch(name, attemptID string) string {
	return PrefixName(AttemptLatchPrefix, name) + ":" + attemptID
}
