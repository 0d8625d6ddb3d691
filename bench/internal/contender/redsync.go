package contender

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// redsync's default retry delay (redsync.go, NewMutex): a uniform random
// whole number of milliseconds in [50, 250).
const (
	redsyncMinDelayMs = 50
	redsyncMaxDelayMs = 250
)

func redsyncContender() Contender {
	return Contender{
		Name:      "redsync",
		Library:   "github.com/go-redsync/redsync/v4",
		Wake:      "polling every 50-250ms",
		PollEvery: 250 * time.Millisecond,
		Settings: "WithExpiry(30s) (default 8s; redsync does not renew); blocking Acquire: WithTries(math.MaxInt) (default 32) " +
			"with the default retry delay rand(50ms, 250ms), until ctx ends; one pool (quorum 1); go-redis defaults (pool of 10 connections per CPU)",
		Open: func(opt rueidis.ClientOption) (Client, error) {
			rdb := redis.NewClient(goRedisOptions(opt))
			return &redsyncClient{rdb: rdb, rs: redsync.New(redsyncgoredis.NewPool(rdb)), id: handles.Add(1)}, nil
		},
		supports: goRedisSupports,
	}
}

type redsyncClient struct {
	rdb *redis.Client
	rs  *redsync.Redsync
	id  uint64
}

func (c *redsyncClient) Mutex(name string) Mutex {
	return &redsyncMutex{c: c, name: name, owner: owner("redsync", c.id)}
}

func (c *redsyncClient) Close() { _ = c.rdb.Close() }

// redsyncMutex makes a redsync.Mutex per acquire: a redsync.Mutex keeps the
// value (token) of its last lock, so each Hold needs its own.
type redsyncMutex struct {
	c     *redsyncClient
	name  string
	owner string
}

func (m *redsyncMutex) Owner() string { return m.owner }

// Acquire calls LockContext with unlimited tries. redsync returns ErrFailed
// when ctx ends during a retry delay, and go-redis an i/o timeout at ctx's
// deadline; Acquire returns ctx's error then.
func (m *redsyncMutex) Acquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	if class == fairness.Reader {
		return nil, ErrNoReads
	}
	h := &redsyncHold{}
	h.mu = m.c.rs.NewMutex(m.name,
		redsync.WithExpiry(peerTTL),
		redsync.WithTries(math.MaxInt),
		// The default delay, observed: redsync calls it only before a retry.
		redsync.WithRetryDelayFunc(func(int) time.Duration {
			h.waited = true
			return time.Duration(rand.IntN(redsyncMaxDelayMs-redsyncMinDelayMs)+redsyncMinDelayMs) * time.Millisecond
		}))
	if err := h.mu.LockContext(ctx); err != nil {
		if ended := ctxEnded(ctx); ended != nil {
			return nil, fmt.Errorf("redsync %q: %w", m.name, ended)
		}
		return nil, fmt.Errorf("redsync %q: %w", m.name, err)
	}
	return h, nil
}

// TryAcquire calls TryLockContext, which makes one attempt and returns
// *redsync.ErrTaken when the lock is held.
func (m *redsyncMutex) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	if class == fairness.Reader {
		return nil, ErrNoReads
	}
	h := &redsyncHold{mu: m.c.rs.NewMutex(m.name, redsync.WithExpiry(peerTTL))}
	if err := h.mu.TryLockContext(ctx); err != nil {
		var taken *redsync.ErrTaken
		if errors.As(err, &taken) {
			return nil, busy(err)
		}
		return nil, fmt.Errorf("redsync %q: %w", m.name, err)
	}
	return h, nil
}

type redsyncHold struct {
	mu     *redsync.Mutex
	waited bool // set by the delay function, before LockContext returns
}

// Unlock calls UnlockContext, which runs the delete script (deleting the key
// if it still holds this hold's value) before it returns. It fails if the
// key had expired or was released before (redsync.ErrLockAlreadyExpired),
// or expired and another owner took it.
func (h *redsyncHold) Unlock(ctx context.Context) error {
	ok, err := h.mu.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case err != nil:
		return fmt.Errorf("redsync %q: %w", h.mu.Name(), err)
	}
	return fmt.Errorf("redsync %q: not held: another owner has the key (this hold expired)", h.mu.Name())
}

// WokenBy returns "polling" when the first attempt failed and a retry got
// the lock, "" when the first attempt did.
func (h *redsyncHold) WokenBy() string {
	if h.waited {
		return "polling"
	}
	return ""
}
