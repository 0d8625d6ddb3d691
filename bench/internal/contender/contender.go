// Package contender puts every lock implementation the benchmarks compare
// behind one interface: fairrw's three policies, and three other Go lock
// libraries on Redis used as exclusive-lock baselines (rueidislock,
// bsm/redislock, go-redsync/redsync).
//
// Peers are used with their default or documented settings; Contender.Settings
// says, in one line, what differs from the library's defaults and why. All of
// them wait the same way from the caller's side: Acquire blocks until the lock
// is granted or ctx ends, and a hold never depends on the ctx it was acquired
// with.
package contender

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// Sentinel errors.
var (
	// ErrBusy is returned (wrapped: check it with errors.Is) by
	// Mutex.TryAcquire when the lock is held elsewhere. The error also wraps
	// the library's own (fairrw.ErrNotAcquired, rueidislock.ErrNotLocked,
	// redislock.ErrNotObtained, *redsync.ErrTaken).
	ErrBusy = errors.New("contender: lock is busy")
	// ErrNoReads is returned by Acquire and TryAcquire for a Reader request
	// on a contender that has exclusive locks only (Contender.Reads false).
	ErrNoReads = errors.New("contender: no shared (read) locks")
)

// Contender is one lock implementation under test.
type Contender struct {
	// Name is short and stable, for benchmark names and reports:
	// "redisson", "writer-preferring", "phase-fair", "rueidislock",
	// "redislock" or "redsync".
	Name string
	// Library is the Go package that implements it: "fairrw",
	// "github.com/redis/rueidis/rueidislock", "github.com/bsm/redislock" or
	// "github.com/go-redsync/redsync/v4".
	Library string
	// Reads says whether it has shared (read) locks: the fairrw policies
	// only. The others serve Writer requests only.
	Reads bool
	// Renews says whether a held lease is renewed automatically (fairrw: a
	// batched watchdog per Client; rueidislock: an extension per lock). The
	// others hold for a fixed TTL.
	Renews bool
	// Wake is how a waiter learns the lock is free.
	Wake string
	// PollEvery is the longest pause between a polling waiter's attempts (0
	// for waiters woken by Redis). A handoff measurement releases at a
	// random point of that period, so that a poller is not always caught at
	// the same phase.
	PollEvery time.Duration
	// Settings are the settings used where they differ from the library's
	// defaults, and why (one line).
	Settings string
	// Open connects a new client, with its own connection pool, to the Redis
	// that opt describes. The go-redis based peers connect to
	// opt.InitAddress[0]. opt is copied, never changed. Check Supports first.
	Open func(opt rueidis.ClientOption) (Client, error)

	supports   func(opt rueidis.ClientOption, miniredis bool) error
	openLeased func(opt rueidis.ClientOption, lease time.Duration) (Client, time.Duration, error)
}

// Client is one process's connection to Redis for a contender.
type Client interface {
	// Mutex returns a new lock owner's handle on the lock name. Two handles
	// on one name exclude each other, as two processes would, also when they
	// come from the same Client.
	Mutex(name string) Mutex
	// Close closes the client's connections and stops its goroutines. Holds
	// still held are not released; Redis frees them when their lease or TTL
	// runs out.
	Close()
}

// Mutex is one lock owner's handle.
type Mutex interface {
	// Acquire blocks until a hold of class's mode is granted, or ctx ends
	// (then it returns an error wrapping ctx's error). A Reader request on an
	// exclusive-only contender returns ErrNoReads. The hold lasts until its
	// Unlock (or its lease is lost), whatever happens to ctx later.
	fairness.Mutex
	// TryAcquire makes one attempt. It returns an error wrapping ErrBusy
	// (check with errors.Is) when the lock is held elsewhere.
	TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error)
}

// Policies returns the three fairrw policies, in order redisson,
// writer-preferring, phase-fair.
func Policies() []Contender {
	return []Contender{redissonContender(), writerPreferringContender(), phaseFairContender()}
}

// Peers returns the other libraries, exclusive locks only: rueidislock,
// redislock, redsync.
func Peers() []Contender {
	return []Contender{rueidislockContender(), redislockContender(), redsyncContender()}
}

// All returns Policies then Peers.
func All() []Contender { return append(Policies(), Peers()...) }

// Extras returns the contenders that are not in All: fairrw's Mutex
// ("mutex", the wire format of Java Redisson's RLock; exclusive locks
// only). The cost measurements add it beside the RWMutex policies; the
// fairness scenarios leave it out, since it queues nobody, as the Redisson
// policy's writers.
func Extras() []Contender { return []Contender{mutexContender()} }

// Supports returns nil if c can run against the Redis that opt describes
// (miniredis: an in-process miniredis rather than a real Redis), or the
// reason why not. For example rueidislock needs RESP3 client tracking, which
// miniredis lacks and which DisableCache and AlwaysRESP2 turn off.
func (c Contender) Supports(opt rueidis.ClientOption, miniredis bool) error {
	if len(opt.InitAddress) == 0 {
		return fmt.Errorf("%s: the ClientOption has no InitAddress", c.Name)
	}
	if c.supports == nil {
		return nil
	}
	if err := c.supports(opt, miniredis); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	return nil
}

// OpenLeased is Open with the lease of every hold set to lease, for a
// contender that renews (Renews): fairrw's WithLeaseTime, renewed every
// third of it; rueidislock's KeyValidity, extended every half of it (its
// default ExtendInterval). It also returns that renewal interval. It fails
// for a contender that does not renew.
func (c Contender) OpenLeased(opt rueidis.ClientOption, lease time.Duration) (Client, time.Duration, error) {
	if c.openLeased == nil {
		return nil, 0, fmt.Errorf("%s: does not renew leases", c.Name)
	}
	if lease <= 0 {
		return nil, 0, fmt.Errorf("%s: lease %v: must be positive", c.Name, lease)
	}
	return c.openLeased(opt, lease)
}

// needsCacheOff is the condition of every rueidis-based contender: rueidis
// turns client tracking on unless DisableCache is set, and refuses to connect
// (rueidis.ErrNoCache) where the server or the protocol cannot track.
func needsCacheOff(opt rueidis.ClientOption, miniredis bool) error {
	switch {
	case opt.DisableCache:
		return nil
	case miniredis:
		return errors.New("miniredis has no CLIENT TRACKING: set DisableCache (and AlwaysRESP2)")
	case opt.AlwaysRESP2:
		return errors.New("rueidis needs RESP3 for client tracking: AlwaysRESP2 needs DisableCache")
	}
	return nil
}

// handles numbers Clients and owners, for Owner.
var handles atomic.Uint64

// owner names a peer's lock owner: the contender, the Client and the handle.
func owner(contender string, client uint64) string {
	return fmt.Sprintf("%s:%d:%d", contender, client, handles.Add(1))
}

// busy wraps the library's "taken" error so that both it and ErrBusy match.
func busy(err error) error { return fmt.Errorf("%w: %w", ErrBusy, err) }

// ctxEnded returns ctx's error once ctx has ended or its deadline has
// passed, else nil. A go-redis call fails with an i/o timeout at ctx's
// deadline (go-redis sets it on the connection) a moment before ctx
// reports it ended: that is the wait timing out, which a benchmark counts
// as a timeout, not a library error that ends its run.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
