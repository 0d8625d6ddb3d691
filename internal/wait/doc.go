// Package wait wakes the waiters of a fairrw Client: the registry of its
// waiters, one group per lock with the pub/sub subscription they share,
// the wake-ups that a release's message, an invalidation, a grant or a
// reader's entry turn into (whom each policy's messages let in), the probe
// that tells a subscription lost in a topology change from one that is
// back, and the backoff of retry loops.
//
// It knows nothing of fairrw: the Client passes in a Config (where its
// subscriptions go, when it closes) and each lock's Keys, which say in
// which Format its policy's messages come. The registry's lock is its own, and the
// methods that must hold it are unexported (their names end in Locked), so
// that no caller outside can take part in its locking.
package wait
