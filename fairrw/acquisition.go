package fairrw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// An acquisition is one acquire call (Lock, RLock, TryLock, TryRLock, or a
// quorum's node attempt) from its first attempt to its outcome: a Lease, or
// an error after which nothing of it stays held. It owns the whole path:
// the attempts, the wait between them, the grant a release made on its
// owner's behalf, and the give-back of an owner it cannot return.
//
// Its steps, in order (run):
//  1. a first attempt; a Lock that may queue listens for releases first,
//     when this Client already does, so that a grant made meanwhile is
//     not missed;
//  2. refused, TryLock returns ErrNotAcquired; Lock waits: it sleeps
//     until a release's message, an invalidation or the refusal's bound,
//     and tries again, or takes up the grant a release made to it;
//  3. an owner that ends without a Lease (ctx ended, Close, an error, a
//     grant answered after its lease ran out) is given back (giveBack):
//     whatever of it Redis may keep is released, in the background once
//     the caller has gone.
type acquisition struct {
	m        *RWMutex
	mode     Mode
	cfg      acquireConfig
	wait     bool // Lock, RLock: queue and wait; TryLock, TryRLock: one attempt
	attempts int  // counted for the acquire's span
	waited   bool // it waited for a release (acquireStats)

	o *owner       // the owner it acquires as; a new one after an outlasted grant
	w *wait.Waiter // its place among the Client's waiters, once it has one
	// refused is when the last attempt that Redis refused was sent, and
	// refusedUs the server's clock then: a grant made on the owner's
	// behalf came later, and has a greater token (zero: none yet).
	refused   time.Time
	refusedUs uint64
	// queued, when set, is closed once the first attempt has been answered
	// (a cohort's next leader: see cohort.prequeue).
	queued chan struct{}
	// firstWoken is what a grant at the first attempt reports as having
	// ended its wait (a cohort's next leader waited in its cohort).
	firstWoken wait.Source
	// reader, when set, is a PhaseFair read its Client's cohort waits for
	// (see cohortReader): settled once the first attempt was answered.
	reader *cohortReader
	// reserve is how many fencing tokens a write granted to an attempt
	// of it reserves (acquireRequest.reserve).
	reserve int
	// down is when its tries began to fail for want of Redis (zero: the
	// last one was answered). A caller's ctx without a deadline waits for
	// Redis the connect timeout at most (WithConnectTimeout).
	down time.Time
	// answerBound is how long a waiting acquisition's next attempt waits
	// for its answer (zero: the retry window): it grows after an attempt
	// that went unanswered in time, and falls back once one is answered
	// (see slower).
	answerBound time.Duration
	// keep, when set, is asked when the caller's ctx ended before the
	// outcome: true keeps the acquisition going for another caller, who
	// carries it on (resume) or gives it up (abandon); false ends it.
	// A shared read's leader sets it (see leadRun).
	keep func(*acquisition) bool
}

// slower lengthens the wait of the acquisition's next attempt for its
// answer, after one that got none within its bound: twice as long, up to
// the lease asked for (an answer later than that is a grant outlasted,
// given back anyway), and never below the retry window. Only a
// Lock or RLock waits so: it tries again as the same owner, and Redis
// grants a retry of a first hold that a copy of an earlier attempt was
// granted. On a connection whose answers come later than the retry window
// (a loaded machine, a slow link) while its commands reach Redis on time,
// each attempt would be granted there and given up here before its answer
// came, and the name stay held, renewed by every retry, for a waiter that
// never learns it holds it: no one else is granted until its ctx ends.
// Copies of one attempt are still sent within the retry window only.
func (a *acquisition) slower() {
	if !a.wait {
		return
	}
	w := a.m.c.retryWindow()
	longest := max(w, a.cfg.lease)
	a.answerBound = min(max(2*a.answerBound, 2*w), longest)
}

// addTo adds the acquisition's figures to s, its acquire's.
func (a *acquisition) addTo(s *acquireStats) {
	s.attempts += a.attempts
	s.waited = s.waited || a.waited
}

// signalQueued closes queued, once, and settles reader: the first attempt
// was answered (or failed).
func (a *acquisition) signalQueued() {
	if a.queued != nil {
		close(a.queued)
		a.queued = nil
	}
	a.reader.settle()
}

// attemptResult is one acquire attempt carried to a definite outcome.
type attemptResult struct {
	reply acquireReply
	// reserve is how many fencing tokens the grant reserved, its own
	// included: what the attempt asked for, or, for a grant a release
	// made on the owner's behalf, wire.TokenReserve. A grant that reserved
	// more than the Client knows (an attempt that took up such a grant)
	// only leaves tokens unused.
	reserve int
	sent    time.Time // when the attempt was first sent: a grant's lease starts no earlier
	// cover, when set, is how long from sent the grant is held at least
	// (a grant made on the owner's behalf); otherwise the lease asked for.
	cover time.Duration
	woken wait.Source
	// unsure is set when a try of this attempt may have reached Redis
	// unanswered (owner.unsure, for this attempt alone): a copy of it may
	// have been applied, or be applied until its accept window ends.
	unsure bool
	// spare is set for a Lease made on a run's granted hold for a read that
	// waits for the run's leader (Lease.spare): it is spare from the moment
	// it is made, before a renewal or its timer can see it.
	spare bool
}

// errNoAnswer is an attempt that got no answer within the retry window:
// its outcome is unknown (owner.unsure says so), and a copy of it may still
// take the lock until the accept window ends. Redis is unavailable
// (errRedisTimeout), not the lock held.
var errNoAnswer = tag("no answer from Redis", errRedisTimeout)

// errOutlasted is a grant answered after its lease ran out. The owner is
// given back (which releases the grant); Lock tries again as a new owner,
// TryLock and TryRLock return ErrNotAcquired.
var errOutlasted = fmt.Errorf("%w: the grant was answered after its lease ran out", ErrNotAcquired)

// run carries the acquisition to its outcome.
func (a *acquisition) run(ctx context.Context) (*Lease, error) {
	m := a.m
	joined := false
	if a.wait && m.policy.queued() {
		a.w = m.c.waiters().JoinListening(&m.keys.Keys, waitMode(a.mode), a.o.id)
		joined = a.w != nil
	}
	got, err := a.first(ctx, joined)
	return a.end(ctx, got, err)
}

// resume carries on an acquisition that another read of its Client kept
// (see keep): it tries again at once as the same owner, which finds its
// place in Redis (its queue entry, or a grant made to it meanwhile), and
// waits on as its first caller would have.
func (a *acquisition) resume(ctx context.Context) (*Lease, error) {
	got, err := a.waitFor(ctx, a.m.c.settings().leaseTime, false)
	return a.end(ctx, got, err)
}

// end is the acquisition's last step: its outcome, unless it ended for its
// caller's ctx alone while a read it stands for in Redis still waits
// (keep), which carries it on. A definite failure (a policy mismatch, a
// skewed clock) is the outcome even if ctx ended meanwhile: carried on,
// it would fail again.
func (a *acquisition) end(ctx context.Context, got attemptResult, err error) (*Lease, error) {
	if err != nil && a.keep != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) && !a.m.c.isClosing() && a.keep(a) {
		return nil, err
	}
	l, err := a.outcome(ctx, got, err)
	if a.w != nil {
		a.m.c.waiters().Leave(a.w)
		a.w = nil
	}
	return l, err
}

// abandon ends an acquisition kept for reads that all left before one
// carried it on: what of its owner Redis may keep is given back.
func (a *acquisition) abandon() {
	a.keep = nil
	_, _ = a.end(context.Background(), attemptResult{}, context.Canceled)
}

// runQueued carries to its outcome an acquisition whose owner a release
// queued in Redis already (a cohort's successor: see cohort.prequeue), and
// whose waiter listened before that release was sent: it waits for its
// grant as after a refused first attempt. When that release failed (it
// may or may not have queued the owner), it starts with an attempt, as the
// same owner: one finds its entry, or its grant, and takes it up.
func (a *acquisition) runQueued(ctx context.Context, released error) (*Lease, error) {
	var got attemptResult
	var err error
	if released == nil {
		got, err = a.waitFor(ctx, a.m.c.settings().leaseTime, true)
	} else {
		a.o.sent = true // a copy of that release may still queue it
		got, err = a.first(ctx, true)
	}
	return a.end(ctx, got, err)
}

// outcome turns the end of the acquisition's wait into its outcome: a
// Lease, or an error after which nothing of its owner stays held.
func (a *acquisition) outcome(ctx context.Context, got attemptResult, err error) (*Lease, error) {
	m := a.m
	if err != nil {
		if a.o.unsure || a.o.queued || errors.Is(err, errOutlasted) || errors.Is(err, ErrNotReplicated) {
			a.giveBack()
		}
		if errors.Is(err, errOutlasted) {
			return nil, &notAcquiredError{name: m.keys.name, mode: a.mode, bound: time.Millisecond}
		}
		return nil, err
	}
	if m.c.isClosing() {
		a.giveBack()
		return nil, closedError(m.keys.name)
	}
	return newLease(ctx, a.o, a.mode, a.cfg, got), nil
}

// first makes the first attempt and, refused, returns TryLock's refusal
// or waits (Lock).
func (a *acquisition) first(ctx context.Context, joined bool) (attemptResult, error) {
	a.attempts++
	got, err := a.attempt(ctx, 0, a.wait, false)
	a.signalQueued()
	if a.wait && (errors.Is(err, errOutlasted) || errors.Is(err, errNoAnswer)) {
		// Lock goes on waiting: as a new owner after a grant that came too
		// late (given back), as the same one after an attempt that got no
		// answer.
		if errors.Is(err, errOutlasted) {
			a.asNewOwner()
		}
		got, err = attemptResult{reply: acquireReply{wait: time.Millisecond}}, nil
	}
	switch {
	case err != nil:
		return got, err
	case got.reply.granted:
		got.woken = a.firstWoken
		return got, nil
	case !a.wait:
		if a.o.unsure {
			a.giveBack()
		}
		return got, &notAcquiredError{name: a.m.keys.name, mode: a.mode, bound: got.reply.wait}
	}
	if got.reply.refused {
		a.refused, a.refusedUs = got.sent, got.reply.refusedUs
	}
	return a.waitFor(ctx, got.reply.wait, joined && got.reply.refused)
}

// waitFor blocks until a grant, ctx's end or Close. It joins the lock's
// waiters first, unless it listened before its first attempt (listening:
// no release since was missed, and the wait starts with a sleep), waits
// for the subscription, then tries again on every wake-up, and in any
// case no later than bound (the PTTL that the last refusal returned).
// An attempt that got no answer is tried again as the same owner (a copy
// of it that still takes the lock is then found by the next attempt); a
// grant that came too late is given back, and the wait goes on as a new
// owner.
func (a *acquisition) waitFor(ctx context.Context, bound time.Duration, listening bool) (attemptResult, error) {
	m := a.m
	if a.w == nil {
		a.w = m.c.waiters().Join(&m.keys.Keys, waitMode(a.mode), a.o.id)
	}
	a.waited = true
	m.tel.waiting(a.mode, 1)
	defer m.tel.waiting(a.mode, -1)
	if err := a.w.AwaitSubscription(ctx, m.retryBound(bound)); err != nil {
		return attemptResult{}, m.waitError(err)
	}
	if listening {
		if err := a.w.Sleep(ctx, m.retryBound(bound)); err != nil {
			return attemptResult{}, m.waitError(err)
		}
	}
	for {
		got, ok := a.grantedBy()
		if ok {
			if time.Now().Before(got.sent.Add(got.cover)) {
				return got, nil
			}
			// The grant's lease ran out before it was seen: give it back.
			a.asNewOwner()
		}
		a.attempts++
		got, err := a.attempt(ctx, 0, true, true)
		switch {
		case errors.Is(err, errOutlasted):
			a.asNewOwner()
			got.reply.wait = time.Millisecond
		case errors.Is(err, errNoAnswer):
			got.reply.wait = wait.MinRetryBackoff
		case err != nil:
			return got, err
		case got.reply.granted:
			got.woken = a.w.Source()
			m.c.waiters().Granted(a.w)
			return got, nil
		case got.reply.refused:
			a.refused, a.refusedUs = got.sent, got.reply.refusedUs
		}
		if err := a.w.Sleep(ctx, m.retryBound(got.reply.wait)); err != nil {
			return attemptResult{}, m.waitError(err)
		}
	}
}

// asNewOwner gives the owner back and goes on as a new one: it is called
// only when the owner's grant came too late to use, and Redis dated that
// grant from its arrival, so that only the give-back frees the name before
// it runs out (the first attempt once switched without it, and held the
// name for up to a lease after the Client had dropped the owner).
func (a *acquisition) asNewOwner() {
	a.giveBack()
	a.o = a.m.newOwner()
	if a.w != nil {
		a.m.c.waiters().Rename(a.w, a.o.id)
	}
	a.refused, a.refusedUs = time.Time{}, 0
}

// grantedBy returns the grant a release made to the owner, if one was
// delivered, a refused attempt tells when it began at the earliest, and
// the owner uses it as it is (see countsFromGrant). The hold then lasts
// until its queue entry's deadline, which Redis counted from that
// attempt's arrival: the Lease counts its lease from the attempt's send,
// so its local deadline never passes the one Redis keeps. A grant whose
// token is not above the server's clock at that refusal was made before
// it: a message that stalled past a grant that has since run out, which
// must not count.
func (a *acquisition) grantedBy() (attemptResult, bool) {
	token, by, ok := a.w.TakeGrant()
	if !ok || a.refused.IsZero() || token <= a.refusedUs || a.countsFromGrant() {
		return attemptResult{}, false
	}
	return attemptResult{
		reply:   acquireReply{granted: true, token: token},
		reserve: wire.TokenReserve,
		sent:    a.refused,
		cover:   a.cfg.lease,
		woken:   by,
	}, true
}

// countsFromGrant reports whether a grant made on the owner's behalf must
// be taken up by an attempt before it is returned: a lease of its own
// (WithLease) is counted from the take-up, not from an earlier refusal,
// so it is never shorter than asked, and Redis keeps it exactly that long;
// with WithSyncReplicas, the take-up waits for the replicas as a direct
// grant does (its WAIT covers the grant, written earlier). A watchdog
// lease is renewed from its grant on, and is used as it is.
func (a *acquisition) countsFromGrant() bool {
	return a.cfg.explicit || a.m.c.settings().syncReplicas > 0
}

// request describes an attempt of the acquisition.
func (a *acquisition) request(further int, wait bool) acquireRequest {
	c := a.m.c
	return acquireRequest{
		mode:         a.mode,
		owner:        a.o.id,
		lease:        a.cfg.lease,
		queue:        c.settings().leaseTime,
		window:       c.acceptWindow(),
		publish:      c.publishCmd(),
		syncReplicas: c.settings().syncReplicas,
		syncTimeout:  c.settings().syncTimeout,
		notify:       a.cfg.notify,
		further:      further,
		wait:         wait,
		reserve:      a.reserve,
	}
}

// attempt runs one acquire attempt until its outcome is known. With wait,
// a refused attempt queues the owner where the policy keeps a queue;
// further > 0 takes a further hold (see acquireRequest); a first hold that
// finds a grant made on the owner's behalf takes it up. A failure whose outcome is unknown (a
// lost reply, a broken connection) is retried with the same stamp for the
// retry window, which the scripts make idempotent; after that, or when ctx
// ends first, it returns an error and marks the owner unsure: the caller
// must give it back unless it goes on acquiring as the same owner. A
// failure that proves nothing was sent (no connection could be made)
// leaves the owner as it was.
//
// A waiting acquisition's attempt waits for its answer longer than the
// retry window after one that went unanswered in time (see slower).
//
// A waiter's attempt (tracked) also arms client tracking on the lock key, in
// the same round trip, so that the next change to it wakes the waiter.
func (a *acquisition) attempt(ctx context.Context, further int, waits, tracked bool) (attemptResult, error) {
	m, o := a.m, a.o
	ac := &attemptCall{m: m, req: a.request(further, waits)}
	req := &ac.req
	o.read = o.read || a.mode == Read // before sending: its outcome may stay unknown
	o.sent = true
	req.tracked = tracked && m.c.tracks() && m.keys.Tracked != ""
	got := attemptResult{sent: time.Now(), reserve: max(a.reserve, 1)}
	req.stamp = got.sent
	// Copies are sent for the retry window; an answer is waited for as long
	// as the acquisition's answer bound, when that is longer (see slower).
	resendUntil := got.sent.Add(m.c.retryWindow())
	tdeadline := got.sent.Add(max(m.c.retryWindow(), a.answerBound))
	_, bounded := ctx.Deadline()
	var unreachable time.Time // when a ctx without a deadline stops waiting for Redis
	if !bounded {
		if a.down.IsZero() {
			unreachable = got.sent.Add(m.c.settings().connectTimeout)
		} else {
			unreachable = a.down.Add(m.c.settings().connectTimeout)
		}
		if m.c.settings().syncReplicas > 0 {
			unreachable = unreachable.Add(m.c.settings().syncTimeout) // an answer waits for the replicas that long
		}
		if unreachable.Before(tdeadline) {
			tdeadline = unreachable
		}
	}
	tctx, cancel := context.WithDeadline(ctx, tdeadline)
	defer cancel()
	// A Shutdown cut short stops it: boundedHalting cancels tctx then, and
	// the Client's closing (which comes first) wakes the backoff below.
	backoff := wait.NewBackoff(wait.MinRetryBackoff, wait.MaxRetryBackoff)
	var failed error             // the last try that got no answer for want of a connection
	var unanswered time.Duration // how long the last try went without an answer
	for {
		if ctx.Err() != nil { // this try is not sent: it changes nothing
			return got, a.ended(ctx, failed, unanswered)
		}
		called := time.Now()
		reply, err := boundedHalting[acquireReply](m.c, tctx, cancel, ac)
		if err == nil {
			a.down = time.Time{}
			a.answerBound = 0
			o.queued = o.queued || (waits && m.policy.queued() && !reply.granted)
			if reply.granted {
				o.fast = reply.fast
			}
			return a.answered(got, reply, req)
		}
		if !unsent(err) && !definite(err) { // a definite error changed nothing
			o.unsure, got.unsure = true, true
			o.copies.Store(true)
		}
		if definite(err) || (a.cfg.unreachableFails && !o.unsure) {
			return got, tag(fmt.Sprintf("fairrw: acquire %q: %s", m.keys.name, reason(err)), err)
		}
		// A try that rueidis ended at ctx's deadline may return a moment
		// before ctx reports it: the next turn of the loop does.
		unanswered = time.Since(called)
		// A try that the caller's ctx cut short (a dial the net package
		// ended at ctx's deadline, as an i/o timeout, a moment before ctx
		// reports it) says nothing of Redis: it does not hide the refusal
		// before it, which is what the caller is told.
		if redisDown(err) && !cutShort(ctx) {
			failed = err
		}
		if (failed != nil || unanswered >= m.c.telemetry().slowAnswer) && a.down.IsZero() {
			a.down = called
		}
		switch {
		case ctx.Err() != nil:
			return got, a.ended(ctx, failed, unanswered)
		case m.c.isClosing():
			return got, closedError(m.keys.name)
		case !bounded && !a.down.IsZero() && !time.Now().Before(a.down.Add(m.c.settings().connectTimeout)):
			return got, a.unreachable(failed, unanswered)
		case tctx.Err() != nil:
			a.slower()
			return got, fmt.Errorf("fairrw: acquire %q: %w within %v: %w", m.keys.name, errNoAnswer, tdeadline.Sub(got.sent), err)
		}
		if err := backoff.Wait(tctx, m.c.closingDone()); err != nil && tctx.Err() == nil {
			return got, m.waitError(err)
		}
		if !time.Now().Before(resendUntil) && tctx.Err() == nil {
			// No copy after the retry window (see lua/common.lua).
			return got, fmt.Errorf("fairrw: acquire %q: %w within %v: %w", m.keys.name, errNoAnswer, m.c.retryWindow(), err)
		}
	}
}

// ended is an attempt's error when its caller's ctx ended: Redis
// unavailable when a try failed for want of Redis (failed) or the last
// one went unanswered for the Client's slowAnswer, so that an outage does not read as a
// lock held too long; otherwise ctx's error. Either way it wraps ctx's.
func (a *acquisition) ended(ctx context.Context, failed error, unanswered time.Duration) error {
	m := a.m
	switch {
	case failed != nil:
		return tag(fmt.Sprintf("fairrw: acquire %q: Redis at %s unavailable: %v (%v)", m.keys.name, m.c.address(), failed, ctx.Err()),
			ErrUnavailable, ctx.Err(), failed)
	case unanswered >= m.c.telemetry().slowAnswer:
		return tag(fmt.Sprintf("fairrw: acquire %q: no answer from Redis at %s in %.3fs (%v)", m.keys.name, m.c.address(), unanswered.Seconds(), ctx.Err()),
			errRedisTimeout, ctx.Err())
	}
	return fmt.Errorf("fairrw: acquire %q: %w", m.keys.name, ctx.Err())
}

// unreachable is an attempt's error when its caller's ctx, which has no
// deadline, waited the connect timeout for a Redis that did not answer.
func (a *acquisition) unreachable(failed error, unanswered time.Duration) error {
	m := a.m
	if failed != nil {
		return tag(fmt.Sprintf("fairrw: acquire %q: Redis at %s unavailable for the connect timeout %v: %v", m.keys.name, m.c.address(), m.c.settings().connectTimeout, failed),
			ErrUnavailable, failed)
	}
	return tag(fmt.Sprintf("fairrw: acquire %q: no answer from Redis at %s in %.3fs (the connect timeout is %v)", m.keys.name, m.c.address(), unanswered.Seconds(), m.c.settings().connectTimeout),
		errRedisTimeout)
}

// attemptCall is one attempt's request, as bounded runs it.
type attemptCall struct {
	m   *RWMutex
	req acquireRequest
}

func (ac *attemptCall) procedure() string { return "fairrw.acquire" }

func (ac *attemptCall) call(ctx context.Context) (acquireReply, error) {
	m := ac.m
	return m.policy.acquire(ctx, m.c.redis(), &m.keys, &ac.req)
}

// answered turns an attempt's reply into its outcome.
func (a *acquisition) answered(got attemptResult, reply acquireReply, req *acquireRequest) (attemptResult, error) {
	m := a.m
	got.reply = reply
	switch {
	case reply.void:
		if time.Since(got.sent) < m.c.retryWindow() {
			// Redis found the attempt older than the accept window while
			// this clock says it is younger than the retry window.
			return got, fmt.Errorf("%w: %q: Redis's clock is ahead of this machine's by more than %v", ErrClockSkew, m.keys.name, m.c.acceptWindow()-m.c.retryWindow())
		}
		// It reached Redis too late and took nothing: a refusal.
		got.reply = acquireReply{wait: time.Millisecond}
	case reply.gone:
		return got, fmt.Errorf("%w: %q: the owner's hold is gone from Redis", ErrNotHeld, m.keys.name)
	case reply.granted && !time.Now().Before(got.sent.Add(req.lease)):
		// The attempt outlasted its lease (rueidis retried it through an
		// outage, a failover): the grant may have run out in Redis
		// already, and a Lease from it would be born lost.
		return got, errOutlasted
	case reply.granted && req.syncReplicas > 0 && reply.replicas < req.syncReplicas:
		// A failover now could lose the grant.
		return got, fmt.Errorf("%w: %q: %d of %d replicas acknowledged within %v",
			ErrNotReplicated, m.keys.name, reply.replicas, req.syncReplicas, req.syncTimeout)
	}
	return got, nil
}

// giveBack gives the acquisition's owner back (see RWMutex.giveBack).
func (a *acquisition) giveBack() { a.m.giveBack(a.o, a.mode, a.cfg.lease) }
