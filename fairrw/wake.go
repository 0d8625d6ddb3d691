package fairrw

// wakeSource says what woke a waiter, for the handoff figures per path.
type wakeSource uint8

const (
	wakeNone         wakeSource = iota
	wakePubSub                  // a release's message on the lock's channel
	wakeInvalidation            // client tracking: the lock key changed or expired
	wakeTimer                   // the PTTL that the failed attempt returned ran out
	wakeResubscribe             // the subscription was re-made: messages may be lost
	wakeHandover                // a waiter that left, or a reader that entered, passed it on
	wakeGrant                   // a release granted it the lock, and its message said so
	wakeReply                   // a release in this Client granted it the lock, and its reply said so
	wakeCohort                  // a holder of its cohort passed it the lock (cohort.go)
	wakeShare                   // it shares a read hold of its Client (readshare.go)
)

// String names the wake-up path, as Lease.wokenBy (and the acquire span) reports it.
func (s wakeSource) String() string {
	switch s {
	case wakePubSub:
		return "pubsub"
	case wakeInvalidation:
		return "invalidation"
	case wakeTimer:
		return "timer"
	case wakeResubscribe:
		return "resubscribe"
	case wakeHandover:
		return "handover"
	case wakeGrant:
		return "grant"
	case wakeReply:
		return "reply"
	case wakeCohort:
		return "cohort"
	case wakeShare:
		return "share"
	default:
		return ""
	}
}
