package fairrw

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// A Lease is one granted hold of a lock: a read or the write, from one
// acquire. It is alive until it is unlocked or lost; Done tells which moment
// that is, and Err why.
//
// A Lease taken without WithLease is renewed by its Client's watchdog every
// third of the lease time. A Lease whose hold Redis no longer has, or whose
// renewal cannot be confirmed before its local deadline (the time its
// acquire was sent plus the lease), is lost at once: Done closes and Err
// returns an error wrapping ErrLeaseLost, even while Redis is unreachable.
// Work guarded by the lock should stop when Done closes.
//
// A Lease is safe for concurrent use.
type Lease struct {
	m    *RWMutex
	mode Mode
	// owner is the owner the hold was granted under. Its unlock and
	// renewals must use it even after the handle has moved on to a new
	// tenure (the lease was lost locally, and the handle locked again).
	owner    string
	attempt  string
	lease    time.Duration
	watchdog bool
	woken    wakeSource
	token    uint64
	done     chan struct{}
	granted  time.Time
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

func newLease(ctx context.Context, m *RWMutex, mode Mode, cfg acquireConfig, got attemptResult) *Lease {
	l := &Lease{
		acquireSpan: trace.SpanContextFromContext(ctx),
		m:           m,
		mode:        mode,
		owner:       cfg.owner,
		attempt:     got.attempt,
		lease:       cfg.lease,
		watchdog:    !cfg.explicit,
		woken:       got.woken,
		token:       got.reply.token,
		done:        make(chan struct{}),
		deadline:    got.sent.Add(cfg.lease),
		granted:     time.Now(),
	}
	m.count(mode, 1)
	m.tel.held(mode, 1)
	l.mu.Lock()
	l.timer = time.AfterFunc(time.Until(l.deadline), l.expire)
	l.mu.Unlock()
	m.c.renewer.add(l)
	return l
}

// Name returns the lock name.
func (l *Lease) Name() string { return l.m.keys.name }

// Mode returns Read or Write.
func (l *Lease) Mode() Mode { return l.mode }

// Done returns a channel closed when the lease ends: unlocked, lost, or
// abandoned by Close.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns nil while the lease is held and after a successful Unlock; an
// error wrapping ErrLeaseLost once the lease was lost (also wrapping
// ErrClosed when its Client closed first).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Deadline returns the time until which the lease is known to be held: the
// acquire's (or the last confirmed renewal's) send time plus the lease.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Unlock releases the hold. It runs detached from ctx's cancellation (so a
// cancelled request never leaves a lock held until its lease ends), bounded
// by the Client's unlock timeout, and retries safely. It returns ErrNotHeld
// if the lease was unlocked before or lost, or if Redis no longer had it.
func (l *Lease) Unlock(ctx context.Context) error {
	return l.unlockAs(ctx, false)
}

// unlockAs is Unlock; with unreachableFails, a release that cannot connect
// gives up at once (see RWMutex.release).
func (l *Lease) unlockAs(ctx context.Context, unreachableFails bool) error {
	c := l.m.c
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	l.mu.Lock()
	if l.state != leaseHeld {
		err := l.err
		l.mu.Unlock()
		return endedBefore(l.Name(), err)
	}
	l.state = leaseUnlocking
	l.mu.Unlock()

	span := l.m.tel.startUnlock(ctx, l)
	err := l.unlock(ctx, unreachableFails)
	l.m.tel.endUnlock(span, l, err)
	return err
}

func (l *Lease) unlock(ctx context.Context, unreachableFails bool) error {
	res, err := l.m.release(ctx, l.mode, l.owner, l.attempt, false, unreachableFails)
	switch {
	case err != nil:
		l.end(fmt.Errorf("%w: unlock failed: %w", ErrLeaseLost, err), lossUnlockFailed)
		return err
	case res == releaseNotHeld:
		l.end(fmt.Errorf("%w: Redis no longer had the hold at unlock", ErrLeaseLost), lossGone)
		return fmt.Errorf("%w: %q: Redis no longer had the hold", ErrNotHeld, l.Name())
	default:
		l.end(nil, lossNone)
		return nil
	}
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

// finish closes the lease once; with heldOnly, only while no Unlock is
// under way.
func (l *Lease) finish(err error, cause lossCause, heldOnly bool) bool {
	l.mu.Lock()
	if l.state == leaseEnded || (heldOnly && l.state != leaseHeld) {
		l.mu.Unlock()
		return false
	}
	l.state = leaseEnded
	l.err = err
	l.timer.Stop()
	// Uncounted before Done closes: a holder that sees its lease end and
	// locks again must find the tenure over, or it would re-enter a hold
	// that Redis may still have. (Lock order: Lease.mu, then RWMutex.mu.)
	l.m.count(l.mode, -1)
	close(l.done)
	l.mu.Unlock()
	l.m.c.renewer.remove(l)
	l.m.tel.held(l.mode, -1)
	l.m.tel.leaseEnded(l, cause, err)
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
		l.end(fmt.Errorf("%w: %q: %s", ErrLeaseLost, l.Name(), why), cause)
	}
}

// confirm records a renewal that Redis confirmed: the hold is kept until
// deadline.
func (l *Lease) confirm(deadline time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == leaseEnded || !deadline.After(l.deadline) {
		return
	}
	l.deadline = deadline
	l.timer.Reset(time.Until(deadline))
}

// renewable reports whether the watchdog should renew the lease now.
func (l *Lease) renewable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watchdog && l.state == leaseHeld
}

// WokenBy names the wake-up that ended the acquire's wait: "pubsub" (a
// release's message), "invalidation" (client tracking saw the lock key
// change), "timer" (the PTTL bound ran out), "resubscribe" (the subscription
// was re-made), "handover" (another waiter passed its turn on), or "" when
// the lock was granted without waiting.
func (l *Lease) WokenBy() string { return l.woken.String() }

// Token returns the lease's fencing token. A write grant's token is strictly
// greater than every token granted before for this lock name (a reentrant
// write grant keeps its owner's token); a read grant returns the current
// one. Pass it to the storage the lock guards and have it refuse a token
// lower than the highest it has seen: a holder whose lease was lost without
// its knowing (a long pause, a failover) is then refused there.
//
// Tokens are minted by an INCR in Redis on a key that outlives the lock
// ("fairrw_fence:{N}"). A Redis that restarts without persistence, or fails
// over before replicating, can lose the counter: tokens then start again
// from 1, and a storage that keeps its highest token refuses them until they
// pass it. Run Redis with AOF (appendfsync everysec or always), or raise the
// counter past the storage's highest token (SET fairrw_fence:{N} <max>)
// after such a loss.
func (l *Lease) Token() uint64 { return l.token }

// Owner returns the owner the hold was granted under, "<client uuid>:<n>" as
// written to Redis: the handle's owner for the tenure this lease belongs to
// (RWMutex.Owner names the handle's current or last tenure).
func (l *Lease) Owner() string { return l.owner }

// endedBefore is Unlock's answer for a lease that had already ended: lost
// (err is why) or unlocked (err is nil).
func endedBefore(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrNotHeld, name, err)
	}
	return fmt.Errorf("%w: %q: already unlocked", ErrNotHeld, name)
}
