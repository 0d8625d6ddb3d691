// Package fairrw provides fair distributed read-write locks on Redis.
//
// Many owners may hold a lock's read together; one owner holds its write
// alone. Every hold is a lease that the Client's watchdog renews, so the lock
// of a crashed holder frees itself. A holder learns at once when its lease is
// lost: Lease.Done closes, even while Redis is unreachable.
//
//	c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}))
//	if err != nil { ... }
//	defer c.Close() // or c.Shutdown(ctx): release what is still held first
//	m := c.RWMutex("orders:42") // share it: every Lock is a new owner
//	l, err := m.Lock(ctx)       // waits until granted or ctx is done
//	if err != nil { ... }
//	defer l.Unlock(ctx)
//	select {
//	case <-l.Done(): // lost: stop working on what the lock guards
//	default:
//	}
//
// Every Lock, RLock, TryLock and TryRLock is a new owner, so goroutines share
// a handle as they would a sync.RWMutex. Lease.Lock and Lease.RLock take
// further holds. The Client's Policy chooses which waiter enters next.
// Client.Mutex shares a lock with Java Redisson's RLock, and NewQuorum spans
// independent Redis deployments.
//
// Every call returns by its ctx's deadline, whatever Redis does. A cancelled
// Lock leaves nothing held, and a retry never counts a hold or a release
// twice. Leases are a best-effort bound: a paused holder, or a Redis that
// loses data, can let two holders overlap. Fencing tokens (Lease.Token) are
// the guarantee.
//
// Package fairrwtest runs tests on an in-process Redis. The repository's docs
// folder has the details.
package fairrw
