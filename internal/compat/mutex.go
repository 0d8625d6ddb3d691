package compat

// Names of a Redisson RLock (a reentrant mutex): the hash N itself, with one
// field "<client UUID>:<owner id>" = that owner's hold count, and its
// channel. Its unlock latch is UnlockLatch, as for the read-write lock.
const (
	// MutexChannelPrefix starts an RLock's pub/sub channel name.
	MutexChannelPrefix = "redisson_lock__channel"
	// MutexUnlockMessage is published when an RLock is freed (its last
	// hold unlocked, or a force-unlock). Java wakes one waiter per client.
	MutexUnlockMessage = "0"
)

// MutexChannel returns an RLock's pub/sub channel:
// "redisson_lock__channel:{N}" (or "redisson_lock__channel:N" when the name
// contains '{').
func MutexChannel(name string) string { return PrefixName(MutexChannelPrefix, name) }

// MutexField returns the RLock hash field counting owner's holds: the owner
// itself, "<client UUID>:<owner id>".
func MutexField(owner string) string { return owner }
