package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
)

// A Recorder records every operation made through it, and the
// believed-held interval of every lease it granted.
//
// Create it with NewRecorder, make calls through Acquire and Release (or add
// ops made otherwise with Record), and call End when the history is over
// (Verify does): End stops the goroutine that watches each lease's Done.
// A Recorder is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	ops     []Op
	leases  map[Held]*tracked
	tracked []*tracked
	nextID  uint64
	ended   bool
	stop    chan struct{}
	watches sync.WaitGroup

	// CancelGivesBack records an acquire that ended with its ctx as
	// Refused rather than Unknown. Set it only where no fault can keep the
	// library from keeping its promise that a cancelled acquire gives back
	// what it may have been granted before it returns (Redis reachable,
	// not losing data): the history then has no open-ended operations,
	// which porcupine checks far faster.
	CancelGivesBack bool
}

// A Held is a granted lease the Recorder watches and releases: a
// *fairrw.Lease, of one Redis or of a Quorum, or the lease of another lock.
// A *fairrw.Lease's lock name and mode are read through internal/hidden.
type Held interface {
	Token() uint64
	// Deadline is the lease's local deadline; the zero time once it is
	// no longer known (a quorum lease lost its majority).
	Deadline() time.Time
	Done() <-chan struct{}
	Unlock(ctx context.Context) error
}

// tracked is one lease the Recorder granted: its hold, and whether the hold
// has ended (by an Unlock call or by its loss). Guarded by Recorder.mu.
type tracked struct {
	id    uint64
	lease Held
	hold  Hold
	ended bool
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{leases: make(map[Held]*tracked), stop: make(chan struct{})}
}

// failedOwners numbers the owners of failed acquires.
var failedOwners atomic.Int64

// Acquire takes a hold of mode on m, by TryLock/TryRLock if try is set,
// else by Lock/RLock, and records the call. A granted lease is watched from
// then on: its hold ends at its Unlock call (Release) or when its Done
// closes, whichever comes first.
func (r *Recorder) Acquire(ctx context.Context, m *fairrw.RWMutex, mode fairrw.Mode, try bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	op := Op{Lock: hidden.Name(m), Mode: mode, Kind: Acquire, Call: time.Now()}
	l, err := locktest.Acquire(ctx, m, mode, !try, opts...)
	op.Return = time.Now()
	// Every acquire is a new owner: a grant names it; a failed acquire's
	// owner is never seen again, so it gets a name of its own.
	op.Owner = fmt.Sprintf("%s:failed-%d", hidden.Name(m), failedOwners.Add(1))
	if l != nil {
		op.Owner = l.Owner()
	}
	r.Acquired(op, l, err)
	return l, err
}

// Further takes a further hold of mode for the owner of l (Lease.Lock or
// Lease.RLock: a reentrant hold, or a downgrade's read under the write) and
// records the call as an acquire of that owner, watched as Acquire's are.
// An upgrade (the write from a read) is refused with hidden.ErrUpgrade,
// which wraps fairrw.ErrNotAcquired.
func (r *Recorder) Further(ctx context.Context, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	op := Op{Owner: l.Owner(), Lock: hidden.Name(l), Mode: mode, Kind: Acquire, Call: time.Now()}
	var nl *fairrw.Lease
	var err error
	if mode == fairrw.Write {
		nl, err = l.Lock(ctx, opts...)
	} else {
		nl, err = l.RLock(ctx, opts...)
	}
	op.Return = time.Now()
	if err != nil {
		r.Acquired(op, nil, err)
	} else {
		r.Acquired(op, nl, nil)
	}
	return nl, err
}

// Acquired records an acquire made without Acquire, on a lock other than a
// fairrw.RWMutex (a fairrw.QuorumRWMutex): op has its Owner, Lock, Mode,
// Call and Return set, l is the lease granted and err the call's error. A
// granted lease (err nil) is watched as Acquire's are.
func (r *Recorder) Acquired(op Op, l Held, err error) {
	op.Kind = Acquire
	op.Outcome = acquireOutcome(err)
	if r.CancelGivesBack && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		op.Outcome = Refused
	}
	if err != nil {
		op.Err = err.Error()
		r.Record(op)
		return
	}
	op.Token, op.Deadline = l.Token(), l.Deadline()
	r.track(op, l)
}

// acquireOutcome classifies an acquire's error: refusals and invalid calls
// (nothing was changed) are Refused; anything else may have been granted
// for a while (a Lock whose ctx ended gives back what its last attempt may
// have been granted) and is Unknown.
func acquireOutcome(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, fairrw.ErrNotAcquired), errors.Is(err, fairrw.ErrInvalidName),
		errors.Is(err, fairrw.ErrInvalidOption), errors.Is(err, fairrw.ErrPolicyMismatch):
		return Refused
	default:
		return Unknown
	}
}

// track records a granted acquire and starts watching its lease.
func (r *Recorder) track(op Op, l Held) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	op.Lease = r.nextID
	r.ops = append(r.ops, op)
	t := &tracked{id: op.Lease, lease: l, hold: Hold{
		Owner: op.Owner, Lock: op.Lock, Mode: op.Mode, From: op.Return, Token: op.Token,
	}}
	r.leases[l] = t
	r.tracked = append(r.tracked, t)
	if r.ended { // granted after the history's end: an empty hold
		t.ended, t.hold.To = true, op.Return
		return
	}
	r.watches.Add(1)
	go r.watch(t)
}

// watch ends t's hold when its lease's Done closes, unless its Unlock was
// called first, or the history ends first.
func (r *Recorder) watch(t *tracked) {
	defer r.watches.Done()
	select {
	case <-t.lease.Done():
	case <-r.stop:
		select {
		case <-t.lease.Done():
		default:
			return
		}
	}
	r.lose(t, time.Now())
}

// lose ends t's hold because its lease's Done closed, seen at seen, and
// records a Lost op. The lease closes Done no later than its local
// deadline, so the hold ended at the earlier of the two (at seen when the
// deadline is no longer known).
func (r *Recorder) lose(t *tracked, seen time.Time) {
	end := seen
	if d := t.lease.Deadline(); !d.IsZero() && d.Before(end) {
		end = d
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.ended {
		return
	}
	if end.Before(t.hold.From) {
		end = t.hold.From
	}
	t.ended, t.hold.To = true, end
	r.ops = append(r.ops, Op{
		Owner: t.hold.Owner, Lock: t.hold.Lock, Mode: t.hold.Mode, Kind: Lost,
		Call: end, Return: end, Outcome: OK, Token: t.hold.Token, Lease: t.id,
	})
}

// Release unlocks l and records the call. If l's Done had closed before,
// the hold ended then (a Lost op is recorded first, if the watch has not
// yet); otherwise it ends now, at the Unlock call. A lease that this
// Recorder did not grant is recorded with no owner and no Lease id.
func (r *Recorder) Release(ctx context.Context, l Held) error {
	call := time.Now()
	r.mu.Lock()
	t := r.leases[l]
	r.mu.Unlock()
	op := Op{Lock: hidden.Name(l), Mode: hidden.Mode(l).(fairrw.Mode), Kind: Release, Call: call, Token: l.Token()}
	if t != nil {
		op.Owner, op.Lease = t.hold.Owner, t.id
		r.endByUnlock(t, call)
	}
	err := l.Unlock(ctx)
	op.Return = time.Now()
	op.Outcome = releaseOutcome(err)
	if err != nil {
		op.Err = err.Error()
	}
	r.Record(op)
	return err
}

// endByUnlock ends t's hold at call, the Unlock call time, unless its Done
// closed before: then the hold ended with the loss.
func (r *Recorder) endByUnlock(t *tracked, call time.Time) {
	select {
	case <-t.lease.Done():
		r.lose(t, call)
		return
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !t.ended {
		t.ended, t.hold.To = true, call
	}
}

func releaseOutcome(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, fairrw.ErrNotHeld):
		return Refused
	default:
		return Unknown
	}
}

// Record adds an op made without the Recorder's helpers.
func (r *Recorder) Record(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// End ends the history: it stops watching leases (recording the loss of
// any whose Done has closed) and ends every hold still open now. Later
// calls do nothing. Acquire and Release still record after End, but holds
// granted then are empty.
func (r *Recorder) End() {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	r.ended = true
	close(r.stop)
	r.mu.Unlock()
	r.watches.Wait()
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.tracked {
		if !t.ended {
			t.ended, t.hold.To = true, now
		}
	}
}

// Ops returns a copy of the ops recorded so far, in the order recorded.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Holds returns the holds of the leases granted so far, in grant order. A
// hold still open ends at the current time (call End first for the final
// record).
func (r *Recorder) Holds() []Hold {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	holds := make([]Hold, len(r.tracked))
	for i, t := range r.tracked {
		holds[i] = t.hold
		if !t.ended {
			holds[i].To = now
		}
	}
	return holds
}
