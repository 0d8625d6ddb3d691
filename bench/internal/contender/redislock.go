package contender

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// redislockBackoff is the retry interval of a blocking Acquire: redislock's
// Obtain does not retry by default (Options.RetryStrategy: "Default: do not
// retry"); its retry example (example_test.go, ExampleClient_Obtain_retry)
// uses LinearBackoff(100*time.Millisecond).
const redislockBackoff = 100 * time.Millisecond

func redislockContender() Contender {
	return Contender{
		Name:      "redislock",
		Library:   "github.com/bsm/redislock",
		Wake:      "polling every 100ms",
		PollEvery: 100 * time.Millisecond,
		Settings: "TTL 30s (fairrw's default lease: redislock does not renew); blocking Acquire retries with LinearBackoff(100ms) " +
			"as its Obtain retry example (default NoRetry) until ctx ends; go-redis defaults (pool of 10 connections per CPU)",
		Open: func(opt rueidis.ClientOption) (Client, error) {
			rdb := redis.NewClient(goRedisOptions(opt))
			return &redislockClient{rdb: rdb, locker: redislock.New(rdb), id: handles.Add(1)}, nil
		},
		supports: goRedisSupports,
	}
}

type redislockClient struct {
	rdb    *redis.Client
	locker *redislock.Client
	id     uint64
}

func (c *redislockClient) Mutex(name string) Mutex {
	return &redislockMutex{c: c, name: name, owner: owner("redislock", c.id)}
}

func (c *redislockClient) Close() { _ = c.rdb.Close() }

type redislockMutex struct {
	c     *redislockClient
	name  string
	owner string
}

func (m *redislockMutex) Owner() string { return m.owner }

// Acquire calls Obtain with LinearBackoff(100ms) until it is granted or ctx
// ends. Obtain bounds a context without a deadline by the TTL ("make sure
// we don't retry forever"), so Acquire calls it again when that happens.
func (m *redislockMutex) Acquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	if class == fairness.Reader {
		return nil, ErrNoReads
	}
	_, bounded := ctx.Deadline()
	waited := false
	for {
		retry := &observedRetry{s: redislock.LinearBackoff(redislockBackoff)}
		l, err := m.c.locker.Obtain(ctx, m.name, peerTTL, &redislock.Options{RetryStrategy: retry})
		waited = waited || retry.used
		switch {
		case err == nil:
			return &redislockHold{l: l, waited: waited}, nil
		case ctxEnded(ctx) != nil:
			return nil, fmt.Errorf("redislock %q: %w", m.name, ctxEnded(ctx))
		case !bounded && errors.Is(err, context.DeadlineExceeded):
			continue // Obtain's own bound, not ctx's
		}
		return nil, fmt.Errorf("redislock %q: %w", m.name, err)
	}
}

// TryAcquire calls Obtain without retries (its default).
func (m *redislockMutex) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	if class == fairness.Reader {
		return nil, ErrNoReads
	}
	l, err := m.c.locker.Obtain(ctx, m.name, peerTTL, nil)
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, busy(err)
	case err != nil:
		return nil, fmt.Errorf("redislock %q: %w", m.name, err)
	}
	return &redislockHold{l: l}, nil
}

// observedRetry is a redislock.RetryStrategy that records whether Obtain
// asked for a backoff, which it does only after a failed attempt.
type observedRetry struct {
	s    redislock.RetryStrategy
	used bool // one Obtain call uses it, from one goroutine
}

func (r *observedRetry) NextBackoff() time.Duration {
	r.used = true
	return r.s.NextBackoff()
}

type redislockHold struct {
	l      *redislock.Lock
	waited bool
}

// Unlock calls Release, which deletes the key (if it still holds this lock's
// token) before it returns. It returns redislock.ErrLockNotHeld if the TTL
// ran out or it was released before.
func (h *redislockHold) Unlock(ctx context.Context) error { return h.l.Release(ctx) }

// WokenBy returns "polling" when the first attempt failed and a retry got
// the lock, "" when the first attempt did.
func (h *redislockHold) WokenBy() string {
	if h.waited {
		return "polling"
	}
	return ""
}
