package contender

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// rueidislock's README, on its example's LockerOption:
//
//	KeyMajority:    1,    // Use KeyMajority=1 if you have only one Redis instance. ...
//	NoLoopTracking: true, // Enable this to have better performance if all your Redis are >= 7.0.5.
//
// Its defaults (lock.go, NewLocker) are KeyMajority 2, i.e. 3 keys per lock
// on one server, and NoLoopTracking false. Everything else is left at its
// default: KeyValidity 5s extended every 2.5s, TryNextAfter 20ms.
//
// Known defect (v1.0.79): a waiting WithContext now and then misses the
// release it waits for and then waits until its ctx ends. In try (lock.go),
// acquire starts a key's monitoring goroutine before the loop counts the
// key's failure; when that goroutine runs first it sees no failure, takes
// the failed attempt for a hold being released, and decrements its gate's
// waiter count, which lets a later release delete the gate (or signal it
// spuriously) while a waiter still waits on it: no release or invalidation
// reaches that waiter any more. Counting the failure first (or passing it to
// the goroutine) fixes it. It shows as timeouts in BenchmarkPeers
// op=contended and in fairbench (frequent under the race detector).
func rueidislockContender() Contender {
	return Contender{
		Name:    "rueidislock",
		Library: "github.com/redis/rueidis/rueidislock",
		Renews:  true,
		Wake:    "invalidation (a release in the same Locker signals its waiters directly)",
		Settings: "KeyMajority 1 and NoLoopTracking true, as its README recommends for one Redis instance on Redis >= 7.0.5 " +
			"(default KeyMajority 2 takes 3 keys per lock); defaults otherwise (KeyValidity 5s extended every 2.5s, TryNextAfter 20ms)",
		Open: func(opt rueidis.ClientOption) (Client, error) {
			return openRueidislock(opt, 0)
		},
		openLeased: func(opt rueidis.ClientOption, lease time.Duration) (Client, time.Duration, error) {
			c, err := openRueidislock(opt, lease)
			return c, lease / 2, err // the default ExtendInterval: KeyValidity / 2
		},
		supports: func(opt rueidis.ClientOption, miniredis bool) error {
			switch {
			case miniredis:
				return errors.New("needs RESP3 client tracking, which miniredis lacks")
			case opt.DisableCache:
				return errors.New("needs client tracking: with DisableCache its waiters poll every 20ms instead of waiting for invalidations")
			case opt.AlwaysRESP2:
				return errors.New("needs RESP3 client tracking, which AlwaysRESP2 turns off")
			case opt.OnInvalidations != nil || opt.ClientTrackingOptions != nil:
				return errors.New("it sets OnInvalidations and ClientTrackingOptions itself")
			}
			return nil
		},
	}
}

// openRueidislock opens a Locker with the README's settings; validity 0
// keeps the default KeyValidity (5s).
func openRueidislock(opt rueidis.ClientOption, validity time.Duration) (Client, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   opt, // NewLocker changes its own copy only
		KeyMajority:    1,
		NoLoopTracking: true,
		KeyValidity:    validity,
	})
	if err != nil {
		return nil, err
	}
	return &rueidisClient{l: l, id: handles.Add(1)}, nil
}

type rueidisClient struct {
	l  rueidislock.Locker
	id uint64
}

func (c *rueidisClient) Mutex(name string) Mutex {
	return &rueidisMutex{l: c.l, name: name, owner: owner("rueidislock", c.id)}
}

// Close closes the Locker: its rueidis client, and the monitoring goroutines
// of any lock still held (which then try to delete their keys).
func (c *rueidisClient) Close() { c.l.Close() }

type rueidisMutex struct {
	l     rueidislock.Locker
	name  string
	owner string
}

func (m *rueidisMutex) Owner() string { return m.owner }

func (m *rueidisMutex) Acquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	return m.lock(ctx, class, m.l.WithContext)
}

func (m *rueidisMutex) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	h, err := m.lock(ctx, class, m.l.TryWithContext)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return nil, busy(err)
	}
	return h, err
}

// lock calls WithContext or TryWithContext. rueidislock ties a hold to the
// context it was acquired with: the lock's context derives from it, so the
// lock is released when that context ends, and a context deadline also
// shortens the keys' validity. Callers of Acquire bound the wait with ctx
// and cancel it once granted (fairness.Loop does), so lock passes a context
// that keeps ctx's values but not its cancellation and deadline, cancelled
// when ctx ends only until the call returns. A ctx that never ends is
// passed as it is.
func (m *rueidisMutex) lock(ctx context.Context, class fairness.Class,
	acquire func(context.Context, string) (context.Context, context.CancelFunc, error)) (fairness.Hold, error) {
	if class == fairness.Reader {
		return nil, ErrNoReads
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ctx.Done() == nil { // ctx never ends (Background): nothing to detach from
		held, release, err := acquire(ctx, m.name)
		if err != nil {
			return nil, fmt.Errorf("rueidislock %q: %w", m.name, err)
		}
		return &rueidisHold{name: m.name, held: held, release: release, free: func() {}}, nil
	}
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, hcancel)
	held, release, err := acquire(hctx, m.name)
	if !stop() { // ctx ended during the call: hcancel ran, or is running
		if err == nil {
			release()
		}
		hcancel()
		return nil, fmt.Errorf("rueidislock %q: %w", m.name, ctx.Err())
	}
	if err != nil {
		hcancel()
		return nil, fmt.Errorf("rueidislock %q: %w", m.name, err)
	}
	return &rueidisHold{name: m.name, held: held, release: release, free: hcancel}, nil
}

// rueidisHold is a rueidislock hold.
type rueidisHold struct {
	name     string
	held     context.Context    // rueidislock's: ends when the lock is lost or released
	release  context.CancelFunc // rueidislock's: see Unlock
	free     context.CancelFunc // the context lock made
	unlocked atomic.Bool
}

// Unlock releases the lock. rueidislock's release function is synchronous:
// it cancels the lock's context, then waits until the monitoring goroutine
// of every key has run its delete script (lock.go: `return func() {
// cancel(); <-done }`), so the key is gone from Redis when Unlock returns.
// It takes no context and reports nothing, so ctx is unused; Unlock returns
// an error if the lock was lost before (its keys expired or were deleted)
// or if it was unlocked before.
func (h *rueidisHold) Unlock(context.Context) error {
	if h.unlocked.Swap(true) {
		return fmt.Errorf("rueidislock %q: unlocked twice", h.name)
	}
	lost := h.held.Err() != nil
	h.release()
	h.free()
	if lost {
		return fmt.Errorf("rueidislock %q: the lock was lost before Unlock", h.name)
	}
	return nil
}

// Err returns nil while the lock is held and after Unlock, and an error once
// rueidislock has reported the lock lost (its context ended: the key was
// deleted, expired or could not be extended).
func (h *rueidisHold) Err() error {
	if h.unlocked.Load() || h.held.Err() == nil {
		return nil
	}
	return fmt.Errorf("rueidislock %q: the lock was lost", h.name)
}

// WokenBy returns "invalidation", the only wake-up path of rueidislock's
// waiters, for every hold, also one granted at the first attempt: whether
// WithContext had to wait cannot be observed from outside without an extra
// attempt (TryWithContext first), which would change what is measured. Use
// it only for a grant known to have waited (a handoff).
func (h *rueidisHold) WokenBy() string { return "invalidation" }
