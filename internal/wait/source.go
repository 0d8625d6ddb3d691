package wait

// Source says what woke a waiter, for the handoff figures per path.
type Source uint8

// The paths by which a waiter is woken, or a hold comes to it.
const (
	None         Source = iota // no wake-up
	PubSub                     // a release's message on the lock's channel
	Invalidation               // client tracking: the lock key changed or expired
	Timer                      // the PTTL that the failed attempt returned ran out
	Resubscribe                // the subscription was re-made: messages may be lost
	Handover                   // a waiter that left, or a reader that entered, passed it on
	Grant                      // a release granted it the lock, and its message said so
	Reply                      // a release in this Client granted it the lock, and its reply said so
	Cohort                     // a holder of its cohort passed it the lock (fairrw's cohort.go)
	Share                      // it shares a read hold of its Client (fairrw's readshare.go)
)

// String names the wake-up path, as Lease.wokenBy (and the acquire span) reports it.
func (s Source) String() string {
	switch s {
	case PubSub:
		return "pubsub"
	case Invalidation:
		return "invalidation"
	case Timer:
		return "timer"
	case Resubscribe:
		return "resubscribe"
	case Handover:
		return "handover"
	case Grant:
		return "grant"
	case Reply:
		return "reply"
	case Cohort:
		return "cohort"
	case Share:
		return "share"
	default:
		return ""
	}
}
