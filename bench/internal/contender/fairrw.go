package contender

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

const fairrwDefaults = "fairrw defaults: 30s watchdog lease renewed every 10s, client tracking unless DisableCache"

func redissonContender() Contender {
	return fairrwContender("redisson", fairrw.Redisson(), "pubsub+invalidation (PTTL timer as a fallback)",
		fairrwDefaults+"; WithPolicy(Redisson())")
}

func writerPreferringContender() Contender {
	return fairrwContender("writer-preferring", fairrw.WriterPreferring(), "pubsub (PTTL timer as a fallback)",
		fairrwDefaults+"; WriterPreferring() is the default policy")
}

func phaseFairContender() Contender {
	return fairrwContender("phase-fair", fairrw.PhaseFair(), "pubsub (PTTL timer as a fallback)",
		fairrwDefaults+"; WithPolicy(PhaseFair())")
}

// CohortsOff returns the fair policies with fairrw.WithCohorts(false),
// "writer-preferring-nocohorts" and "phase-fair-nocohorts": every grant
// through Redis, in strict FIFO order across Clients. Not in All: the
// scenarios where cohorts change who is granted next run them beside the
// policies with cohorts on (the default).
func CohortsOff() []Contender {
	return []Contender{
		fairrwContender("writer-preferring-nocohorts", fairrw.WriterPreferring(), "pubsub (PTTL timer as a fallback)",
			fairrwDefaults+"; WithCohorts(false): no cohorts, no shared reads", fairrw.WithCohorts(false)),
		fairrwContender("phase-fair-nocohorts", fairrw.PhaseFair(), "pubsub (PTTL timer as a fallback)",
			fairrwDefaults+"; WithPolicy(PhaseFair()), WithCohorts(false): no cohorts, no shared reads", fairrw.WithCohorts(false)),
	}
}

// mutexContender is fairrw's Mutex (the wire format of Java Redisson's
// RLock): exclusive only, admitting whoever asks first after a release.
func mutexContender() Contender {
	open := func(opt rueidis.ClientOption, extra ...fairrw.Option) (Client, error) {
		c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, extra...)...)
		if err != nil {
			return nil, err
		}
		return mutexClient{c}, nil
	}
	return Contender{
		Name:     "mutex",
		Library:  "fairrw",
		Renews:   true,
		Wake:     "pubsub+invalidation (PTTL timer as a fallback)",
		Settings: fairrwDefaults + "; Client.Mutex (Redisson's RLock format, whatever the Client's policy)",
		Open:     func(opt rueidis.ClientOption) (Client, error) { return open(opt) },
		openLeased: func(opt rueidis.ClientOption, lease time.Duration) (Client, time.Duration, error) {
			c, err := open(opt, fairrw.WithLeaseTime(lease))
			return c, lease / 3, err // fairrw renews every third of the lease
		},
		supports: fairrwSupports,
	}
}

func fairrwContender(name string, p fairrw.Policy, wake, settings string, extra ...fairrw.Option) Contender {
	return Contender{
		Name:     name,
		Library:  "fairrw",
		Reads:    true,
		Renews:   true,
		Wake:     wake,
		Settings: settings,
		Open: func(opt rueidis.ClientOption) (Client, error) {
			return openFairrw(opt, p, extra...)
		},
		openLeased: func(opt rueidis.ClientOption, lease time.Duration) (Client, time.Duration, error) {
			c, err := openFairrw(opt, p, append(slices.Clip(extra), fairrw.WithLeaseTime(lease))...)
			return c, lease / 3, err // fairrw renews every third of the lease
		},
		supports: fairrwSupports,
	}
}

func fairrwSupports(opt rueidis.ClientOption, miniredis bool) error {
	if opt.OnInvalidations != nil || opt.ClientTrackingOptions != nil {
		return errors.New("it sets OnInvalidations and ClientTrackingOptions itself")
	}
	return needsCacheOff(opt, miniredis)
}

func openFairrw(opt rueidis.ClientOption, p fairrw.Policy, extra ...fairrw.Option) (Client, error) {
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt), fairrw.WithPolicy(p)}, extra...)...)
	if err != nil {
		return nil, err
	}
	return fairClient{c}, nil
}

type fairClient struct{ c *fairrw.Client }

func (f fairClient) Mutex(name string) Mutex {
	m := f.c.RWMutex(name)
	return fairMutex{Mutex: fairness.RW(m), m: m}
}

func (f fairClient) Close() { _ = f.c.Close() } // never fails

// fairMutex acquires through fairness.RW: its Holds are *fairrw.Lease.
type fairMutex struct {
	fairness.Mutex
	m *fairrw.RWMutex
}

func (f fairMutex) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	var l *fairrw.Lease
	var err error
	if class == fairness.Reader {
		l, err = f.m.TryRLock(ctx)
	} else {
		l, err = f.m.TryLock(ctx)
	}
	switch {
	case errors.Is(err, fairrw.ErrNotAcquired):
		return nil, busy(err)
	case err != nil:
		return nil, err
	}
	return l, nil
}

// mutexClient hands out fairrw Mutex handles.
type mutexClient struct{ c *fairrw.Client }

func (f mutexClient) Mutex(name string) Mutex { return mutexHandle{f.c.Mutex(name), name} }

func (f mutexClient) Close() { _ = f.c.Close() } // never fails

// mutexHandle is a fairrw Mutex: Writer requests only.
type mutexHandle struct {
	m    *fairrw.Mutex
	name string
}

func (h mutexHandle) Owner() string { return h.name }

func (h mutexHandle) Acquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	return h.lock(ctx, class, h.m.Lock)
}

func (h mutexHandle) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	l, err := h.lock(ctx, class, h.m.TryLock)
	if errors.Is(err, fairrw.ErrNotAcquired) {
		return nil, busy(err)
	}
	return l, err
}

func (h mutexHandle) lock(ctx context.Context, class fairness.Class,
	lock func(context.Context, ...fairrw.AcquireOption) (*fairrw.Lease, error)) (fairness.Hold, error) {
	if class == fairness.Reader {
		return nil, ErrNoReads
	}
	l, err := lock(ctx)
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return l, nil
}
