package fairrw

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/fairrw/rwlock/internal/wait"
)

// A quorumLease is one granted hold of a lock on at least a majority of a
// Quorum's nodes, behind the Lease a QuorumRWMutex returns (Lease.q). It is
// lost as soon as fewer than a majority of its node leases are alive, or its
// Deadline passes; the node holds left are then given back. A quorumLease is
// safe for concurrent use.
type quorumLease struct {
	m      *QuorumRWMutex
	mode   Mode
	leases []*Lease // by node; nil where the node did not grant
	token  uint64
	woken  wait.Source // what woke the acquire for its last round
	drift  time.Duration
	ends   endContext    // Context and Done (its channel), cancelled under mu
	stop   chan struct{} // closed by Unlock: the watcher ends
	ended  chan struct{} // closed when the watcher has ended

	mu    sync.Mutex
	state leaseState
	err   error
}

func newQuorumLease(m *QuorumRWMutex, mode Mode, h quorumHolds, lease time.Duration) *quorumLease {
	return &quorumLease{
		m:      m,
		mode:   mode,
		leases: h.leases,
		token:  h.token,
		drift:  m.q.drift(lease),
		stop:   make(chan struct{}),
		ended:  make(chan struct{}),
	}
}

// start begins watching the lease's node leases.
func (l *quorumLease) start() {
	go l.watch()
}

// lockName returns the lock name.
func (l *quorumLease) lockName() string { return l.m.name }

// Token returns the fencing token, the highest of the granting nodes'. Any
// later majority shares a node with this one, so later write grants get
// greater tokens (see Lease.Token).
func (l *quorumLease) Token() uint64 { return l.token }

// wokenBy names what ended the acquire's last sleep, as Lease.wokenBy:
// "pubsub", "invalidation", "timer", or "" when it did not sleep.
func (l *quorumLease) wokenBy() string { return l.woken.String() }

// Done returns a channel closed when the lease ends: unlocked or lost.
func (l *quorumLease) Done() <-chan struct{} { return l.ends.get(&l.mu).Done() }

// Err returns nil while the lease is held and after a successful Unlock,
// and an error wrapping ErrLeaseLost once it was lost.
func (l *quorumLease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Context returns a context cancelled when the quorum lease ends, at the
// moment Done closes, as Lease.Context.
func (l *quorumLease) Context() context.Context { return l.ends.get(&l.mu) }

// nodes returns how many nodes hold the lease now (alive node leases).
func (l *quorumLease) nodes() int {
	n := 0
	for _, x := range l.leases {
		if x != nil && x.Err() == nil && !isDone(x.Done()) {
			n++
		}
	}
	return n
}

// Deadline returns the time until which the lease is known to be held: the
// majority-th latest deadline of its node leases, minus the clock-drift
// allowance, or the zero time once fewer than a majority are alive.
func (l *quorumLease) Deadline() time.Time { return l.deadline() }

func (l *quorumLease) deadline() time.Time {
	d := majorityDeadline(l.leases, l.m.q.majority)
	if d.IsZero() {
		return d
	}
	return d.Add(-l.drift)
}

// Unlock releases the hold on every node at once, and returns by ctx's
// deadline. It returns nil when a majority of nodes released it, and an error
// wrapping ErrNotHeld if the lease was unlocked before, lost, or held by fewer
// than a majority. When ctx ends first, it returns an error wrapping ctx's
// error, the lease ends, and the releases go on in the background.
func (l *quorumLease) Unlock(ctx context.Context) error {
	if l == nil {
		return errNilLease
	}
	l.mu.Lock()
	if l.state != leaseHeld {
		err := l.err
		l.mu.Unlock()
		return endedBefore(l.lockName(), err)
	}
	l.state = leaseUnlocking
	l.mu.Unlock()
	close(l.stop)
	<-l.ended

	freed := quorumHolds{leases: l.leases}.release(ctx, l.m.q, l.m.q.majority)
	if freed < l.m.q.majority && ctx.Err() != nil {
		err := fmt.Errorf("%w: %q: Unlock returned before a majority of nodes confirmed the release (%w), which goes on in the background", ErrLeaseLost, l.lockName(), ctx.Err())
		l.finish(err, false)
		return fmt.Errorf("fairrw: unlock %q: released on %d of %d nodes before ctx ended, going on in the background: %w", l.lockName(), freed, len(l.leases), ctx.Err())
	}
	if freed < l.m.q.majority {
		err := fmt.Errorf("%w: %q: released on %d of %d nodes, %d needed", ErrLeaseLost, l.lockName(), freed, len(l.leases), l.m.q.majority)
		l.finish(err, false)
		return tag("fairrw: lock not held: "+reason(err), ErrNotHeld, err)
	}
	l.finish(nil, false)
	return nil
}

// finish closes the lease once with err as its Err; with heldOnly, only
// while no Unlock is under way (the Unlock's answer then decides).
func (l *quorumLease) finish(err error, heldOnly bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == leaseEnded || (heldOnly && l.state != leaseHeld) {
		return false
	}
	l.state = leaseEnded
	l.err = err
	l.ends.end(err) // closes Done: Done is the Context's own channel
	return true
}

// watch ends the lease when fewer than a majority of node leases are alive
// or its deadline passes, whichever comes first; node renewals move the
// deadline on. It stops at Unlock.
func (l *quorumLease) watch() {
	defer close(l.ended)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	recv := func(ch any) reflect.SelectCase {
		return reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	cases := []reflect.SelectCase{recv(l.stop), recv(t.C)}
	for _, x := range l.leases {
		if x != nil {
			cases = append(cases, recv(x.Done()))
		}
	}
	for {
		d := l.deadline()
		if d.IsZero() || !time.Now().Before(d) {
			l.lose(d)
			return
		}
		t.Reset(time.Until(d))
		chosen, _, _ := reflect.Select(cases)
		switch {
		case chosen == 0:
			return
		case chosen > 1: // a node lease ended: not selected again
			cases[chosen].Chan = reflect.Value{}
		}
	}
}

// lose ends a lease still held, and gives back the node holds left: alone
// they are a minority that would only make others wait.
func (l *quorumLease) lose(d time.Time) {
	why := "not confirmed on a majority before its deadline"
	if d.IsZero() {
		why = fmt.Sprintf("held on %d of %d nodes, %d needed", l.nodes(), len(l.leases), l.m.q.majority)
	}
	// The give-back is counted before Done closes: a holder that sees Done
	// and closes the Quorum must find it to wait for.
	q := l.m.q
	tracked := q.reserve()
	if !l.finish(fmt.Errorf("%w: %q: %s", ErrLeaseLost, l.lockName(), why), true) {
		if tracked {
			q.late.Done()
		}
		return
	}
	release := func() { quorumHolds{leases: l.leases}.release(context.Background(), q, len(l.leases)) }
	if !tracked {
		release()
		return
	}
	go func() {
		defer q.late.Done()
		release()
	}()
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
