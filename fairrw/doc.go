// Package fairrw provides distributed read-write locks on Redis, for Go
// services that must coordinate across processes and hosts.
//
// Many owners may hold a lock's read together; one owner holds its write
// alone. A lock survives the crash of its holder through leases: a hold lasts
// a lease time (30s by default) and the Client's watchdog renews every hold
// it has, in one batched round trip, every third of it. A holder learns at
// once when its lease is lost: Lease.Done closes and Lease.Err wraps
// ErrLeaseLost, also while Redis is unreachable.
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
// A handle may be shared by goroutines as a sync.RWMutex field is: every
// Lock, RLock, TryLock and TryRLock is a new owner, and they exclude each
// other as calls from separate processes do. Reentrancy and downgrade are
// explicit: Lease.RLock and Lease.Lock take a further hold for the owner of a
// Lease. Every Lease is its own hold, with its own lease: no release of one
// shortens another, and one that ended keeps no one out.
//
// # Policies
//
// Which waiter a lock admits next is its Policy, chosen per Client with
// WithPolicy. WriterPreferring(), the default, turns new readers away while
// a writer waits, and serves writers first-come-first-served; a steady
// stream of writers can starve readers. PhaseFair() alternates read and
// write phases, so neither side starves. Redisson() is
// wire-compatible with Java Redisson's RReadWriteLock (the same keys,
// fields, channel and messages), so Go and Java services can share one lock;
// it prefers readers, so writers can starve under overlapping readers.
//
// # Mutex
//
// Client.Mutex returns a mutex (reentrant through Lease.Lock) that shares its lock with Java
// Redisson's RLock (the same hash, field, lease, channel and messages), for
// services that exclude Java code holding an RLock on the same name. A name
// is either a mutex or a read-write lock: using it as the other returns
// ErrPolicyMismatch.
//
// # Quorum locking
//
// NewQuorum spans several independent Redis deployments, one Client each: a
// QuorumRWMutex is granted on a majority of them (Redlock), so its lock
// survives the loss of a minority. See Quorum for what it assumes about
// clocks, restarts and pauses, and why fencing tokens still matter.
//
// # Fencing
//
// Every write grant carries a fencing token (Lease.Token) greater than all
// earlier ones for the name: storage that refuses tokens lower than the
// highest it has seen is safe from a holder that lost its lease unaware.
// Tokens come from the server's clock, so that no counter has to outlive
// the lock in Redis; they keep increasing as long as that clock does not
// step back by more than the time between two write grants.
//
// # Waiting
//
// Waiters do not spin on a short timer. A waiter sleeps until the lock's
// release message on pub/sub (one subscription per Client and lock name,
// shared by all its waiters), a client-side-caching invalidation of the lock
// key (when the Client built its own connection with tracking), or at the
// latest the PTTL that its failed attempt returned, since Redis sends nothing
// when a lock expires. A fair policy's waiter also tries again every third of
// the lease (10s with the default lease) while it waits: its queue place
// carries a deadline, so that a waiter that crashed blocks no one for long,
// and that attempt renews it. Wake-ups are targeted: a release wakes
// one waiting writer, or all waiting readers, not every waiter. Under
// WriterPreferring and PhaseFair the release that frees the lock grants it
// to the writer at the head of the queue, in the same script: the message
// (or, in the releasing Client, the Unlock's reply) carries the grant, and
// the waiter holds the lock without another round trip.
//
// # Safety
//
// A retry after a lost reply never counts a hold twice or releases one
// twice, however late it lands: a first hold is known by its owner, further
// holds and releases write absolute counts, an unlock's retry gets the first
// answer, and Redis refuses any copy older than twice the unlock timeout
// (assuming the clocks of the client and of Redis differ by less than the
// unlock timeout; otherwise ErrClockSkew). Every call returns by its ctx's
// deadline, whatever Redis does. What must still happen after the caller
// has gone goes on in the background, owned by the Client: a Lock whose ctx
// ends gives its owner up (what it may have been granted or queued is
// released), and an Unlock that Redis did not confirm in time is retried,
// each until Redis answers or what it would remove has run out there.
// Redis keeps every hold LeaseMargin past its Lease's Deadline. Leases
// are a best effort bound on how long a holder keeps a lock: a holder that
// pauses longer than its lease, or a Redis that loses data in a restart or a
// failover, can let two holders overlap; guard what the lock protects
// accordingly.
//
// # Ending work with the lease
//
// Lease.Context returns a context cancelled when the lease ends, with the
// reason as its cause: pass it to the work the lock guards. Client.Shutdown
// is the graceful stop of a service: it ends every lease (so that work is
// told first), then releases every hold in Redis, so that waiters here and
// in other processes are woken at once. Client.Close is the abrupt stop: it
// ends the leases but leaves their holds to expire, as a crash does.
//
// # Inspection
//
// Client.Inspect reads who holds a name, for how long, who waits and its
// fencing token, under any policy and for a Mutex, without changing it.
//
// # Testing
//
// Package fairrwtest gives tests a ready Client on an in-process Redis, or
// on a redis-server it starts.
//
// # Observability
//
// A Client traces with OpenTelemetry (WithTracerProvider, else the global
// provider): a client span around every acquire (fairrw.Lock, fairrw.RLock,
// fairrw.TryLock, fairrw.TryRLock; fairrw.Mutex.Lock and fairrw.Mutex.TryLock
// under the policy "redisson-mutex"; fairrw.Quorum.Lock and the like, on
// the first node's Client, around the node attempts of every round) with
// the lock, mode, policy, outcome,
// attempts, wait, wake-up path and fencing token; a span per Unlock and one
// per lost lease (fairrw.lease.lost, with its cause), both linked to the
// acquire; and one per watchdog round (fairrw.renew). It records metrics
// (WithMeterProvider): fairrw.acquire.duration, fairrw.hold.duration,
// fairrw.holds.active, fairrw.waiters, fairrw.renewals,
// fairrw.renewal.failures and fairrw.leases.lost. With WithLogger, failures
// and lost leases are also logged with log/slog.
package fairrw
