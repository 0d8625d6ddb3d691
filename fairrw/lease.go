package fairrw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/internal/wait"
)

// A Lease is one granted hold of a lock, a read or the write. It is alive
// until it is unlocked or lost; Done tells when, and Err why. Unless taken
// WithLease, the Client's watchdog renews it. A Lease whose hold Redis no
// longer has, or whose renewal is not confirmed before its Deadline, is lost
// at once, even while Redis is unreachable.
//
// Every Lease is its own hold: Redis keeps it at least until its Deadline,
// whatever happens to the owner's other Leases, and once ended it keeps no one
// out. Once every Lease of an owner is unlocked, the owner holds nothing. A
// Lease is safe for concurrent use.
//
// A QuorumRWMutex's Lease is a quorum lease: a hold on at least a majority of
// a Quorum's nodes, renewed on each by its Client. It is lost as soon as
// fewer than a majority of its node holds are alive, or its Deadline passes;
// the node holds left are then given back. It takes no further holds.
type Lease struct {
	// q is the quorum lease behind a QuorumRWMutex's Lease, which has no
	// other field but mode: every method is then q's.
	q        *quorumLease
	m        *RWMutex
	own      *owner // the owner the hold was granted under
	mode     Mode
	lease    time.Duration
	watchdog bool
	woken    wait.Source
	token    uint64
	cohort   *cohort    // the cohort whose hold it is, if any (cohort.go)
	share    *readShare // the shared read hold it is on, if any (readshare.go)
	// spare is set while the Lease waits, made on a run's granted hold, for
	// a read that waited for the run's leader (leadRun.leases): until that
	// read claims it, no caller holds it, so its end records no hold time,
	// no loss and no Unlock span or failure.
	// claim clears it under mu while the Lease holds, and finish reads it
	// under mu: a Lease is either ended as spare or handed to its read.
	spare atomic.Bool
	// released is set, under its owner's lock, once its release was sent:
	// the owner holds nothing for it any more (see owner.alive).
	released bool
	// ends is the lease's Context; its Done channel is the lease's Done,
	// so the two end at the same instant. Cancelled under mu.
	ends    endContext
	granted time.Time
	// acquireSpan is the span of the acquire that granted the lease: the
	// spans of its unlock and of its loss link to it.
	acquireSpan trace.SpanContext

	mu       sync.Mutex
	state    leaseState
	err      error
	deadline time.Time
	timer    *time.Timer
}

type leaseState uint8

const (
	leaseHeld leaseState = iota
	leaseUnlocking
	leaseEnded
)

// newLease records a grant to owner o as a Lease, counted among o's.
// The caller holds o's lock if o may have other Leases.
func newLease(ctx context.Context, o *owner, mode Mode, cfg acquireConfig, got attemptResult) *Lease {
	m := o.m
	l := &Lease{
		acquireSpan: trace.SpanContextFromContext(ctx),
		m:           m,
		own:         o,
		mode:        mode,
		lease:       cfg.lease,
		watchdog:    !cfg.explicit,
		woken:       got.woken,
		token:       got.reply.token,
		cohort:      cfg.cohort,
		share:       cfg.share,
		deadline:    got.sent.Add(cfg.lease),
		granted:     time.Now(),
	}
	if got.cover > 0 {
		l.deadline = got.sent.Add(got.cover)
	}
	l.spare.Store(got.spare) // before anything can end it (finish)
	o.leases = append(o.leases, l)
	if mode == Write {
		o.reserve = max(o.reserve, got.reserve) // a pass or a share reserves nothing
	}
	// What Redis keeps of the grant lasts its lease from now at most (a
	// watchdog grant made on the owner's behalf: its queue entry's, as
	// long).
	m.c.heldOwners().holds(o, mode, l.granted.Add(cfg.lease+leaseMargin))
	if l.share != nil {
		m.c.readShares().hold(l.share) // before anything can end it (finish)
	}
	m.tel.held(mode, 1)
	l.mu.Lock()
	l.timer = time.AfterFunc(time.Until(l.deadline), l.expire)
	l.mu.Unlock()
	m.c.leaseRenewer().add(l)
	return l
}

// lockName returns the lock name.
func (l *Lease) lockName() string {
	if l.q != nil {
		return l.q.lockName()
	}
	return l.m.keys.name
}

// Done returns a channel closed when the lease ends: unlocked, lost, or
// ended by its Client's Close or Shutdown.
func (l *Lease) Done() <-chan struct{} {
	if l.q != nil {
		return l.q.Done()
	}
	return l.ends.get(&l.mu).Done()
}

// Err returns nil while the lease is held and after a successful Unlock; an
// error wrapping ErrLeaseLost once the lease was lost (also wrapping
// ErrClosed when its Client's Close or Shutdown ended it).
func (l *Lease) Err() error {
	if l.q != nil {
		return l.q.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Context returns a context cancelled when the lease ends, at the moment Done
// closes, even while Redis does not answer. Its cause is the lease's Err, or
// after a successful Unlock an error that says so and wraps neither
// ErrLeaseLost nor ErrClosed. It is one value per lease, with no
// values or deadline, that the acquire's ctx does not cancel.
func (l *Lease) Context() context.Context {
	if l.q != nil {
		return l.q.Context()
	}
	return l.ends.get(&l.mu)
}

// Deadline returns the time until which the lease is known to be held: the
// send time of its acquire, or of its last confirmed renewal, plus the lease.
// A Lease passed to it in its Client's cohort (WithCohorts) carries on the
// Deadline of the hold, with at least a third of the lease left.
// Redis keeps every hold 5ms longer, so nobody else is granted the lock
// before the Deadline, and a holder that stops when Done closes is alone
// until then (if Done's timer fires within that margin). A quorum lease's
// Deadline is the majority-th latest deadline of its node leases, minus the
// clock-drift allowance, or the zero time once fewer than a majority are
// alive.
func (l *Lease) Deadline() time.Time {
	if l.q != nil {
		return l.q.Deadline()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Unlock releases the hold, and returns by ctx's deadline whatever Redis
// does. It returns nil once Redis confirmed the release, and an error wrapping
// ErrNotHeld if the lease was unlocked before, lost, or gone from Redis. A
// retry gets the first answer. The owner's other Leases keep their holds.
//
// When ctx ends first, Unlock returns an error wrapping ctx's error, the
// lease ends (ErrLeaseLost), and the release goes on in the background until
// Redis confirms it or the hold runs out. A nil Lease returns ErrNotHeld and
// sends nothing.
//
// A quorum lease is released on every node at once: Unlock returns nil when
// a majority of nodes released it, and an error wrapping ErrNotHeld if it was
// held by fewer than a majority.
func (l *Lease) Unlock(ctx context.Context) error {
	if l == nil {
		return errNilLease
	}
	if l.q != nil {
		return l.q.Unlock(ctx)
	}
	return l.unlockAs(ctx, false)
}

// errNilLease is Unlock's answer for a nil Lease.
var errNilLease = fmt.Errorf("%w: Unlock of a nil Lease (its acquire failed)", ErrNotHeld)

// Guard returns a context derived from ctx that is also cancelled when the
// lease ends, with the lease's end as its cause, and its cancel function. It
// starts no goroutine.
func (l *Lease) Guard(ctx context.Context) (context.Context, context.CancelFunc) {
	return guard(ctx, l.Context())
}

// guard joins ctx with a lease's Context (see Lease.Guard).
func guard(ctx, lease context.Context) (context.Context, context.CancelFunc) {
	joined, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lease, func() { cancel(context.Cause(lease)) })
	if lease.Err() != nil {
		// Ended already: AfterFunc would cancel on a goroutine, a moment
		// after the caller may have started work under it.
		cancel(context.Cause(lease))
	}
	return joined, func() {
		stop()
		cancel(context.Canceled)
	}
}

// unlockAs is Unlock; with unreachableFails, a release that cannot connect
// gives up at once (see RWMutex.release).
func (l *Lease) unlockAs(ctx context.Context, unreachableFails bool) error {
	c := l.m.c
	if err := c.enter(); err != nil {
		l.mu.Lock()
		ended, lost := l.state == leaseEnded, l.err
		l.mu.Unlock()
		if ended {
			// Closing ended the lease (or it ended before): ErrNotHeld, as
			// for any lease unlocked before or lost, beside ErrClosed.
			errs := []error{ErrClosed, ErrNotHeld}
			if lost != nil {
				errs = append(errs, lost)
			}
			return tag(fmt.Sprintf("fairrw: unlock %q: the client closed, and the lease had ended", l.lockName()), errs...)
		}
		return closedError(l.lockName())
	}
	defer c.leave()
	l.mu.Lock()
	if l.state != leaseHeld {
		err := l.err
		l.mu.Unlock()
		return endedBefore(l.lockName(), err)
	}
	l.state = leaseUnlocking
	l.mu.Unlock()

	ctx, span := l.m.tel.startUnlock(ctx, l)
	if l.share != nil && l.leaveShareInline() {
		// Another Lease of its owner still holds the shared read: no
		// Redis call, nothing to wait for.
		l.m.tel.endUnlock(ctx, span, l, nil)
		return nil
	}
	if l.cohort != nil && l.passInline() {
		// Passed to the next writer of its cohort, on this goroutine: no
		// Redis call, nothing to wait for.
		l.end(nil, lossNone)
		l.m.tel.endUnlock(ctx, span, l, nil)
		return nil
	}
	err := l.release(ctx, unreachableFails)
	l.m.tel.endUnlock(ctx, span, l, err)
	return err
}

// leaveShare reports whether l, a Lease on a shared read hold being
// unlocked, may end with no Redis call: another Lease of its owner still
// holds a read and none a write, and what they hold covers what Redis
// keeps for l, so that Redis keeps the hold no longer than the Leases
// left. Redis keeps one deadline for the owner's reads, the latest it was
// given; a watchdog Lease's is moved by every renewal of the hold, so a
// watchdog Lease left covers l if l is one too (they are renewed as one);
// otherwise a Lease left must have at least l's time left. When they do
// not (a further read WithLease outlived by l), the Unlock releases in
// Redis, which sets the hold's deadline to theirs, as any release does.
// If so, it ends l at once, under the owner's lock: another Lease's Unlock
// must not count l as still holding, or neither would release the hold in
// Redis. Call it with the owner's lock held; others is what the owner
// holds besides l, as of now.
func (l *Lease) leaveShare(others ownerState, now time.Time) bool {
	if l.mode != Read || others.writes != 0 || len(others.reads) == 0 || l.own.unshared {
		return false
	}
	if left, _ := l.left(now); !(l.watchdog && others.renewedReads > 0) && others.reads[0] < left {
		return false
	}
	l.end(nil, lossNone)
	return true
}

// leaveShareInline is leaveShare on Unlock's goroutine, when the owner's
// lock is free.
func (l *Lease) leaveShareInline() bool {
	o := l.own
	if !o.tryLock() {
		return false
	}
	defer o.unlock()
	now := time.Now()
	return l.leaveShare(o.alive(l, now), now)
}

// passInline passes l's hold on (see pass) when its owner's lock is free
// and the pass needs no wait for a read of who waits in Redis: with no
// Redis call to make, Unlock does it on its caller's goroutine. Otherwise
// the release goes its usual way, and passes there if it can.
func (l *Lease) passInline() bool {
	o := l.own
	if !o.tryLock() {
		return false
	}
	defer o.unlock()
	now := time.Now()
	return l.cohort.pass(context.Background(), time.Time{}, false, l, o.alive(l, now), now)
}

// release runs the unlock on a goroutine of the Client's and waits for it,
// or for ctx to end: the caller then gets ctx's error, the lease ends
// (Done closes), and the release goes on in the background.
func (l *Lease) release(ctx context.Context, unreachableFails bool) error {
	c := l.m.c
	if ctx.Done() == nil { // nothing can end the wait: no goroutine needed
		return l.unlockWithin(ctx, unreachableFails)
	}
	span := trace.SpanFromContext(ctx) // the Unlock's: its release's round trips are traced under it
	rt := &releaseTask{l: l, span: span, unreachableFails: unreachableFails, res: make(chan error, 1)}
	if !c.backgroundTasks().start(rt, true) {
		return l.unlockWithin(ctx, unreachableFails) // the Client closed meanwhile: Close waits for this call
	}
	res := rt.res
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
	}
	// On a Redis that answers, a release sent as ctx ended (a deferred
	// Unlock of a request that was cancelled) is confirmed within the grace.
	grace := time.NewTimer(c.settings().cleanupGrace)
	defer grace.Stop()
	select {
	case err := <-res:
		return err
	case <-grace.C:
		if !l.end(fmt.Errorf("%w: %q: Unlock returned before Redis confirmed the release (%w), which goes on in the background", ErrLeaseLost, l.lockName(), ctx.Err()), lossUnlockFailed) && l.Err() == nil {
			// The release was confirmed as the grace ran out: only its
			// success ends a lease with no Err, and its answer is on its
			// way (unlock sends it right after). Returning ctx's error
			// now would leave an unlocked lease reporting a lost one.
			return <-res
		}
		return fmt.Errorf("fairrw: unlock %q: not confirmed before ctx ended, going on in the background: %w", l.lockName(), ctx.Err())
	}
}

// releaseTask is a release run as background work (Shutdown waits for it):
// its answer reaches the Unlock waiting for it only once the task is no
// longer counted (afterDone), so that a Shutdown right after the Unlock
// returned does not find it still under way.
type releaseTask struct {
	l                *Lease
	span             trace.Span
	unreachableFails bool
	res              chan error
	err              error
}

func (rt *releaseTask) run(bg context.Context) {
	rt.err = rt.l.unlockWithin(withSpan(bg, rt.span), rt.unreachableFails)
}

func (rt *releaseTask) afterDone() { rt.res <- rt.err }

// withSpan returns ctx carrying span, if span records (a context per call
// otherwise, for nothing).
func withSpan(ctx context.Context, span trace.Span) context.Context {
	if !span.IsRecording() {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}

// unlockWithin runs the unlock bounded by ctx and the unlock timeout. A
// method rather than a closure in release: a closure that the goroutine
// branch captures would be allocated on every Unlock. The timeout is
// passed down as a deadline, applied where the unlock waits (see
// releaseOnce), rather than as a context of its own that the release's
// would nest in: one context per release instead of two.
func (l *Lease) unlockWithin(ctx context.Context, unreachableFails bool) error {
	return l.unlock(ctx, time.Now().Add(l.m.c.settings().unlockTimeout), unreachableFails)
}

// unlock releases the hold in Redis, writing what its owner still holds
// alive; the owner's lock keeps its other changes out meanwhile. ctx and
// deadline bound it. A release that got no answer, or could not connect
// (with unreachableFails, at once), is tried again in the background until
// Redis answers, the hold has run out there, or the Client closes.
//
// The owner's last release also gives it up (marks it) when one of its
// attempts had an outcome it never learned: a copy of that attempt may
// still be on its way to Redis, and would take the lock again for an
// owner that no one unlocks any more.
func (l *Lease) unlock(ctx context.Context, deadline time.Time, unreachableFails bool) error {
	res, err := l.releaseOnce(ctx, deadline, unreachableFails)
	switch {
	case err != nil:
		l.end(tag("fairrw: lease lost: "+reason(err), ErrLeaseLost, err), lossUnlockFailed)
		if !definite(err) {
			// Going on in the background, whoever asked: a quorum's
			// release of a node that is down too (it gave up at once so as
			// not to hold up the others), so that the node frees the lock
			// as soon as it is back, not when the hold's lease runs out.
			l.followUp()
		}
		return err
	case res == releaseNotHeld:
		l.end(fmt.Errorf("%w: %q: Redis no longer had the hold at unlock", ErrLeaseLost, l.lockName()), lossGone)
		return fmt.Errorf("%w: %q: Redis no longer had the hold", ErrNotHeld, l.lockName())
	default:
		l.end(nil, lossNone)
		return nil
	}
}

// releaseOnce runs one release of the hold, bounded by ctx and deadline
// (zero: ctx alone), under the owner's lock.
func (l *Lease) releaseOnce(ctx context.Context, deadline time.Time, unreachableFails bool) (releaseResult, error) {
	o := l.own
	if err := o.lockBy(ctx, deadline); err != nil {
		return releaseNotHeld, fmt.Errorf("fairrw: unlock %q: waiting for another change of its owner: %w", l.lockName(), err)
	}
	defer o.unlock()
	now := time.Now()
	st := o.alive(l, now)
	if l.share != nil && l.leaveShare(st, now) {
		return releaseFreed, nil // another Lease still holds the shared read: no Redis call
	}
	if st.writes == 0 && len(st.reads) == 0 {
		o.unshared = true // released: no read shares its hold any more
	}
	var next *cohortSuccessor
	if l.cohort != nil {
		if l.cohort.pass(ctx, deadline, true, l, st, now) {
			return releaseFreed, nil // passed to a waiter of the cohort: no Redis call
		}
		// This Client's PhaseFair reads waiting meanwhile enter first.
		l.cohort.awaitReaders(ctx, deadline)
		next = l.cohort.prequeue(ctx, deadline, l)
	}
	last := o.unsure && st.writes == 0 && len(st.reads) == 0
	o.givenUp = o.givenUp || last
	sent := time.Now()
	st = o.written(l, sent) // what the release writes renews the owner's watchdog Leases
	rc := l.m.newRelease(o, l.mode, st, last)
	if next != nil {
		rc.req.successor = next.o.id
	}
	res, err := l.m.send(ctx, deadline, rc, unreachableFails)
	next.queuedBy(err)
	if err == nil && res != releaseNotHeld {
		o.confirmWritten(st, l, sent)
	}
	if err == nil && st.writes == 0 && len(st.reads) == 0 {
		l.m.c.heldOwners().released(o) // Redis keeps nothing of the owner
	}
	// Its release is sent, and applied unless it failed: its owner's next
	// change must not count it (it ends after the owner's lock is given
	// back), or that change would write a hold for it into Redis, or count
	// on one that is gone (a shared read leaving without a Redis call).
	l.released = true
	return res, err
}

// followUp retries the release of a hold that Redis did not confirm, in
// the background, until Redis answers or the hold has run out there: its
// deadline and the margin Redis keeps past it, or, for a watchdog lease,
// as long as a renewal sent before the Unlock may still reach Redis (the
// accept window) and extend the hold by a lease.
func (l *Lease) followUp() {
	c := l.m.c
	l.mu.Lock()
	moot := l.deadline.Add(leaseMargin)
	if l.watchdog {
		moot = later(moot, time.Now().Add(c.acceptWindow()+c.settings().leaseTime+leaseMargin))
	}
	l.mu.Unlock()
	c.followUp(l.m, "release", moot, func(ctx context.Context) bool {
		_, err := l.releaseOnce(ctx, time.Time{}, false)
		return err == nil || definite(err)
	})
}

// end closes the lease once, with err as its Err (nil after an unlock) and
// cause as the reason of a loss.
func (l *Lease) end(err error, cause lossCause) bool {
	return l.finish(err, cause, false)
}

// lose ends the lease because a renewal found its hold gone, unless an
// Unlock is under way: the renewal may have run after that Unlock's
// release, and the Unlock's own answer decides how the lease ends.
func (l *Lease) lose(err error, cause lossCause) bool {
	return l.finish(err, cause, true)
}

// loseIfGone ends l, just made on its owner's hold without Redis (a share,
// a cohort pass), if a renewal found that hold gone meanwhile: the round
// that set the flag may have looked for the owner's leases before l was
// among them. It reports whether it did.
func (l *Lease) loseIfGone() bool {
	if !l.own.lost(l.mode).Load() {
		return false
	}
	l.lose(fmt.Errorf("%w: %q: a renewal found the hold gone", ErrLeaseLost, l.lockName()), lossGone)
	return true
}

// finish closes the lease once; with heldOnly, only while no Unlock is
// under way.
func (l *Lease) finish(err error, cause lossCause, heldOnly bool) bool {
	l.mu.Lock()
	if l.state == leaseEnded || (heldOnly && l.state != leaseHeld) {
		l.mu.Unlock()
		return false
	}
	unlocking := l.state == leaseUnlocking
	spare := l.spare.Load() // under l.mu: claim clears it only while the Lease holds
	l.state = leaseEnded
	l.err = err
	l.timer.Stop()
	l.ends.end(err) // closes Done: Done is the Context's own channel
	l.mu.Unlock()
	l.m.c.leaseRenewer().remove(l)
	l.m.tel.held(l.mode, -1)
	if !spare { // a spare Lease was no caller's hold (see Lease.spare)
		l.m.tel.leaseEnded(l, cause, err)
	}
	if l.cohort != nil {
		l.cohort.ended(l)
	}
	if l.share != nil {
		l.m.c.readShares().done(l.share)
	}
	// An Unlock under way sends the owner's release, which gives it up if
	// it must (releaseOnce).
	if err != nil && !unlocking && l.own.copies.Load() && (cause == lossExpired || cause == lossDeadline || cause == lossGone) {
		l.m.giveUpRunOut(l.own, l.mode, l.lease)
	}
	return true
}

// expire runs at the local deadline. A renewal confirmed meanwhile has moved
// the deadline (and reset the timer), so only a deadline really passed ends
// the lease.
func (l *Lease) expire() {
	l.mu.Lock()
	passed := !time.Now().Before(l.deadline)
	l.mu.Unlock()
	if passed {
		cause, why := lossDeadline, "not confirmed before its deadline"
		if !l.watchdog {
			cause, why = lossExpired, "its lease ran out"
		}
		l.end(fmt.Errorf("%w: %q: %s", ErrLeaseLost, l.lockName(), why), cause)
	}
}

// confirm records a renewal that Redis confirmed: the hold is kept until
// deadline. A Lease whose deadline has passed is over, even before its
// timer ends it: a confirmation that comes later (a renewal round's late
// answer) does not bring it back. Meanwhile the owner counted it out
// (owner.holding: a release of another of its holds wrote back no hold
// for it, and Redis kept none), so bringing it back would make a Lease
// claim a hold that Redis no longer keeps (TestRedisKeepsEveryLiveLeaseUnderChurn
// found one 143 ms short with two suites side by side).
func (l *Lease) confirm(deadline time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == leaseEnded || !deadline.After(l.deadline) || !time.Now().Before(l.deadline) {
		return
	}
	l.deadline = deadline
	l.timer.Reset(time.Until(deadline))
}

// left returns how long the lease has left as of now, and whether it is
// alive: not ended, and its deadline not passed.
func (l *Lease) left(now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	left := l.deadline.Sub(now)
	return left, l.state != leaseEnded && left > 0
}

// renewable reports whether the watchdog should renew the lease now.
func (l *Lease) renewable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watchdog && l.state == leaseHeld
}

// wokenBy names what ended the acquire's wait: "pubsub", "invalidation",
// "timer", "resubscribe", "handover", "grant" or "reply"; "cohort" (passed
// the write, or led, in its Client's cohort), "share" (it shares its
// Client's read hold); or "" when the lock was granted without waiting.
func (l *Lease) wokenBy() string {
	if l.q != nil {
		return l.q.wokenBy()
	}
	return l.woken.String()
}

// Token returns the lease's fencing token. A write grant's token is strictly
// greater than every token granted before for this lock name; a further write
// hold keeps its owner's. A read returns the last write token still known (or,
// after a write of a cohort that ended without its release, the top of the
// tokens its grant reserved), or 0. Have the guarded storage refuse a token
// lower than the highest it has seen, on a read as on a write when it is
// read, modified and written back (ExampleLease_Token_readModifyWrite): a
// holder that lost its lease unaware is then refused there. Tokens rely on
// Redis's clock, and follow it (docs/reliability.md). A quorum lease's token is the
// highest of the granting nodes': any later majority shares a node with this
// one, so later write grants get greater tokens.
func (l *Lease) Token() uint64 {
	if l.q != nil {
		return l.q.Token()
	}
	return l.token
}

// Owner returns the owner the hold was granted under, "<client uuid>:<n>" in
// Redis, as Inspect reports it in HolderInfo.Owner and Java Redisson writes
// it. The further holds taken from its Leases share it, and so do the Leases
// its Client's cohort passed the hold to, and the reads of its Client that
// share its read hold (WithCohorts). A quorum lease has an
// owner on each node, and returns "".
func (l *Lease) Owner() string {
	if l.q != nil {
		return ""
	}
	return l.own.id
}

// RLock takes a further read hold for the owner of l, without waiting: a
// reentrant read, or from the write a downgrade, with no writer in between.
// The new Lease is unlocked on its own. It returns an error wrapping
// ErrNotHeld when l has ended or its hold is gone, and ErrInvalidOption on a
// Mutex's Lease or a quorum lease.
func (l *Lease) RLock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return l.tracedFurther(ctx, "fairrw.Lease.RLock", Read, opts)
}

// Lock takes a further write hold for the owner of l, without waiting. The
// new Lease is unlocked on its own and keeps l's fencing token. From a read it
// returns an error wrapping ErrNotAcquired, since a read is never upgraded to
// the write (unlock the read, then Lock the handle); when l has ended or
// its hold is gone, an error wrapping ErrNotHeld; on a quorum lease, one
// wrapping ErrInvalidOption.
func (l *Lease) Lock(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return l.tracedFurther(ctx, "fairrw.Lease.Lock", Write, opts)
}

func (l *Lease) tracedFurther(ctx context.Context, op string, mode Mode, opts []AcquireOption) (*Lease, error) {
	if l.q != nil {
		return nil, fmt.Errorf("%w: %q: a quorum lease takes no further holds", ErrInvalidOption, l.q.lockName())
	}
	ctx, tr := l.m.tel.startAcquire(ctx, op, l.lockName(), mode)
	tr.stats.attempts++
	nl, err := l.further(ctx, mode, opts)
	tr.end(nl, err)
	return nl, err
}

// further takes a further hold of mode for l's owner, under the owner's
// lock: Redis sets the owner's count of mode to the holds alive plus this
// one, so a retry never counts twice and a hold that ended is not counted.
func (l *Lease) further(ctx context.Context, mode Mode, opts []AcquireOption) (*Lease, error) {
	m := l.m
	if mode == Write && l.mode == Read {
		return nil, tag(fmt.Sprintf("fairrw: %q: a read is never upgraded to the write (unlock the read, then Lock the handle)", l.lockName()), errUpgrade, ErrNotAcquired)
	}
	if mode == Read && m.policy.name() == mutexPolicyName {
		return nil, fmt.Errorf("%w: a mutex has no read mode", ErrInvalidOption)
	}
	cfg, err := m.prepare(mode, opts)
	if err != nil {
		return nil, err
	}
	if err := m.c.enter(); err != nil {
		return nil, closedError(m.keys.name)
	}
	defer m.c.leave()
	o := l.own
	if err := o.lock(ctx); err != nil {
		return nil, fmt.Errorf("fairrw: further hold on %q: waiting for another change of its owner: %w", l.lockName(), err)
	}
	defer o.unlock()
	now := time.Now()
	if _, live := l.left(now); !live {
		return nil, endedBefore(l.lockName(), l.Err())
	}
	a := &acquisition{m: m, mode: mode, cfg: cfg, o: o}
	got, err := a.attempt(ctx, o.count(mode, now)+1, false, false)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotReplicated):
			// Redis granted the hold, and too few replicas acknowledged
			// it: no Lease stands for it, and Redis must keep no more of
			// the owner than its Leases hold (see owner).
			m.restate(o, mode, cfg.lease, time.Time{})
		case got.unsure:
			// Redis may have granted it, or may yet, until its accept
			// window ends. (Only this attempt's copies can: an earlier
			// further hold left unsure restated after its own.)
			m.restate(o, mode, cfg.lease, got.sent.Add(m.c.acceptWindow()))
		}
		return nil, err
	}
	if !got.reply.granted {
		return nil, fmt.Errorf("%w: %q: a further hold was refused", ErrNotAcquired, l.lockName())
	}
	if mode == Write || l.mode == Write {
		// A further write keeps l's token; so does a read under l's write
		// (Redis knows the token of the write it granted, not the one a
		// cohort passed on: see cohort.go).
		got.reply.token = l.token
	}
	return newLease(ctx, o, mode, cfg, got), nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// endedBefore is Unlock's answer for a lease that had already ended: lost
// (err is why) or unlocked (err is nil).
func endedBefore(name string, err error) error {
	if err != nil {
		return tag("fairrw: lock not held: "+reason(err), ErrNotHeld, err) // err names the lock
	}
	return fmt.Errorf("%w: %q: already unlocked", ErrNotHeld, name)
}
