package contender

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/fairness"
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

func fairrwContender(name string, p fairrw.Policy, wake, settings string) Contender {
	return Contender{
		Name:     name,
		Library:  "fairrw",
		Reads:    true,
		Renews:   true,
		Wake:     wake,
		Settings: settings,
		Open: func(opt rueidis.ClientOption) (Client, error) {
			return openFairrw(opt, p)
		},
		openLeased: func(opt rueidis.ClientOption, lease time.Duration) (Client, time.Duration, error) {
			c, err := openFairrw(opt, p, fairrw.WithLeaseTime(lease))
			return c, lease / 3, err // fairrw renews every third of the lease
		},
		supports: func(opt rueidis.ClientOption, miniredis bool) error {
			if opt.OnInvalidations != nil || opt.ClientTrackingOptions != nil {
				return errors.New("it sets OnInvalidations and ClientTrackingOptions itself")
			}
			return needsCacheOff(opt, miniredis)
		},
	}
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
