package fairrw

// A wakeSignal is what one message on a lock's channel means for the
// waiters of this Client: whom it lets in. Each policy decodes its own
// messages (policyImpl.signal); the wait registry only applies the result.
type wakeSignal struct {
	// readers: every waiting reader may enter.
	readers bool
	// writer: which waiting writer to wake besides.
	writer writerWake
	// owner is the writer named (writerNamed).
	owner string
	// granted: the release granted the named writer the lock, with token;
	// it holds it without another attempt (see waiter.grant).
	granted bool
	token   uint64
}

// writerWake says which waiting writer a message wakes.
type writerWake uint8

const (
	writerNone      writerWake = iota
	writerOne                  // the longest-waiting writer, or anyone if no reader was woken
	writerUnqueued             // one writer that keeps no place in a queue (a quorum's)
	writerNamed                // the writer named by owner
	writerOrAnyMode            // one waiter of any mode (Redisson's "0")
)
