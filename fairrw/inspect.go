package fairrw

import (
	"context"
	"slices"
	"time"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
)

// Policies Inspect reports in LockInfo.Policy besides those of Policy.String.
const (
	// PolicyMutex is the Policy of a name held as a Mutex (Redisson's RLock
	// format).
	PolicyMutex = mutexPolicyName
	// PolicyFair is the Policy of a name whose only holds are reads under
	// WriterPreferring or PhaseFair, once the state that recorded which of
	// the two expired (it lives as long as the first reader's lease; the
	// readers' own deadlines outlive it). Either policy may take it.
	PolicyFair = "fair"
)

// LockInfo is what Redis keeps of one lock at one instant, as Inspect read
// it: who holds it, who waits, and its fencing token.
type LockInfo struct {
	// Name is the lock name.
	Name string
	// Policy is the wire format of the keys found under the name:
	// "writer-preferring", "phase-fair", "redisson" (a Redisson read-write
	// lock, Java's or fairrw's), PolicyMutex (an RLock, Java's or a fairrw
	// Mutex), PolicyFair, or "" when no key of the lock exists (but for the
	// last fencing token). It is the policy an acquire under another one is
	// refused for (ErrPolicyMismatch), and may be set while Holders and the
	// waiters are empty: a fair lock's state outlives its last entries for
	// a while.
	Policy string
	// Time is the server's clock at the instant the lock was read; every
	// Remaining counts from it.
	Time time.Time
	// Holders are the live holds: the write first, then the reads, each in
	// order of owner. An owner that holds the write and reads (a downgrade)
	// appears once in each mode.
	Holders []HolderInfo
	// WaitingWriters are the writers queued for the lock, first to be
	// served first. Only WriterPreferring and PhaseFair queue writers:
	// Redisson's formats record no waiter (Java's waiters wait on pub/sub
	// alone), so under them it is always empty, however many wait.
	WaitingWriters []WaiterInfo
	// WaitingReaders are the readers PhaseFair recorded as waiting for the
	// current write to end, and those it admitted ahead of the next writer
	// (Admitted) that have yet to enter. Other policies record no waiting
	// reader: WriterPreferring only notes that one was turned away.
	WaitingReaders []WaiterInfo
	// Token is the fencing token of the current write, or else the last
	// token minted for the name, while Redis keeps it; 0 when it keeps
	// none. Under WriterPreferring and PhaseFair the write's token lives as
	// long as the write; under the Redisson formats (and for a fair
	// policy's reads) only the last token is kept, for a second after its
	// grant, so a write held longer shows 0 there.
	Token uint64
}

// HolderInfo is one owner's live hold of a lock in one mode.
type HolderInfo struct {
	// Owner is the owner, "<client UUID>:<owner id>" (Lease.Owner; the
	// UUID is Client.ID of the client that holds it, or a Java Redisson
	// client's id and thread id).
	Owner string
	// Mode is Write or Read (a Mutex's holds are Write).
	Mode Mode
	// Holds is how many holds the owner has in Mode (reentrant holds and,
	// for reads, those taken after a downgrade count apart), or 0 where the
	// policy does not count them: WriterPreferring and PhaseFair keep one
	// deadline per reading owner, not a count.
	Holds int
	// Remaining is how long Redis keeps the hold from Time unless it is
	// renewed: its longest lease left. Under the Redisson formats a write's
	// and an RLock's is the hash's time to live, and a read's the longest
	// of the owner's lease keys (the hash's when none is left); negative
	// when Redis keeps it without expiry (a hash written so by hand). Redis
	// keeps no grant time, so how long a hold has lasted is not known.
	Remaining time.Duration
}

// WaiterInfo is one waiter of a lock, as its policy records it.
type WaiterInfo struct {
	// Owner is the waiting owner, as HolderInfo.Owner.
	Owner string
	// Remaining is how long its entry lives from LockInfo.Time unless the
	// waiter refreshes it (a live waiter does, every third of its lease); a
	// waiter gone for longer than that loses its place.
	Remaining time.Duration
	// Lease is the lease a waiting writer asked for (0 for readers).
	Lease time.Duration
	// Admitted marks a reader PhaseFair let in ahead of the next writer,
	// that has not entered yet.
	Admitted bool
}

// inspectScript reads a lock under every format at once (lua/inspect.lua).
// It writes nothing, so it is safe to retry.
var inspectScript = script.New("inspect", true)

// Inspect reads the lock name and reports who holds it, for how long, who
// waits and its fencing token, whatever policy holds it (it need not be the
// Client's: Inspect finds the format from the keys present, and works on a
// Mutex's name too). It is one read-only script call (Redis 7+ runs it
// with EVALSHA_RO, which refuses writes), so holders, waiters and Time are
// one instant's; under the Redisson format a name with readers takes a
// second call, to read their lease keys.
//
// Entries whose deadline passed but that Redis has not removed yet (a
// crashed holder's read, a waiter's queue entry that ran out) count for
// nothing in any policy, and are left out. A key of another type under one
// of the lock's names returns an error wrapping ErrPolicyMismatch. An
// invalid name returns ErrInvalidName before any command.
//
// Inspect returns by ctx's deadline whatever Redis does. It changes
// nothing in Redis: no hold, expiry, queue entry or token
// is written, and it takes no lock, so the answer may be stale as soon as
// it is returned (and staler from a replica, where a rueidis client set to
// send read-only commands to replicas sends it).
func (c *Client) Inspect(ctx context.Context, name string) (*LockInfo, error) {
	if err := validateInspectName(name); err != nil {
		return nil, err
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := c.await(ctx, name); err != nil {
		return nil, err
	}
	keys := inspectKeys(name)
	var leaseKeys []string
	// A Redisson read's lease keys are named in the hash: the first call
	// learns them, a second reads them with it, a third covers holds taken
	// between the two; after that (holds keep changing) reads whose lease
	// keys were not read show the hash's time to live.
	for attempt := 1; ; attempt++ {
		readKeys := append(slices.Clip(keys), leaseKeys...)
		raw, err := bounded(c, ctx, func(ctx context.Context) (*inspectRaw, error) {
			return parseInspect(inspectScript.ExecReadOnly(ctx, c.rdb, readKeys, nil))
		})
		if err != nil {
			return nil, err
		}
		want := raw.leaseKeys(name)
		if attempt == 3 || !missing(want, leaseKeys) {
			return raw.describe(name, leaseKeys)
		}
		leaseKeys = want
	}
}

// Inspect describes the lock of the handle, as Client.Inspect.
func (m *RWMutex) Inspect(ctx context.Context) (*LockInfo, error) {
	if m.err != nil {
		return nil, m.err
	}
	return m.c.Inspect(ctx, m.keys.name)
}

// Inspect describes the mutex of the handle, as Client.Inspect.
func (m *Mutex) Inspect(ctx context.Context) (*LockInfo, error) { return m.rw.Inspect(ctx) }

// inspectKeys are the KEYS of lua/inspect.lua before the lease keys.
func inspectKeys(name string) []string {
	fk := compat.Fair(name)
	return []string{name, fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, compat.Fence(name)}
}

// validateInspectName checks name as every policy does, for every key
// Inspect reads: they must share the name's slot.
func validateInspectName(name string) error {
	return validateName(name, append(inspectKeys(name), compat.LeaseKey(name, "x", 1))...)
}
