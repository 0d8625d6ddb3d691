package fairrw

import (
	"context"
	"fmt"
	"time"
)

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
