package fairrw

import (
	"fmt"
	"sync"
	"time"

	"github.com/fairrw/rwlock/internal/hidden"
)

// A Quorum locks over several independent Redis deployments (Redlock), one
// Client each. A grant needs a majority of them, so the lock survives the loss
// of a minority, and a write quorum excludes every other quorum. Policies are
// fair per node only. It assumes the nodes' and the holder's clocks run at
// about the same rate (WithClockDrift), and that no node restarts without its
// data (docs/quorum.md). A Quorum does not own its Clients: close them after
// it.
type Quorum struct {
	clients     []*Client
	majority    int
	nodeTimeout time.Duration
	driftFactor float64
	leaseTime   time.Duration

	// late tracks the node attempts still running when their round was
	// decided without them; they release whatever they are granted.
	late sync.WaitGroup
	// mu guards closed: every call and give-back reads it (a read lock,
	// which readers take without waiting on each other: with a mutex,
	// quorum calls on a starved machine queued on it seconds past their
	// deadlines), Close writes it.
	mu     sync.RWMutex
	closed bool
}

// A QuorumOption configures a Quorum.
type QuorumOption interface {
	applyQuorum(*quorumConfig) error
}

type quorumOptionFunc func(*quorumConfig) error

func (f quorumOptionFunc) applyQuorum(c *quorumConfig) error { return f(c) }

type quorumConfig struct {
	nodeTimeout time.Duration // 0: derived from the lease
	driftFactor float64
}

// defaultClockDrift is the default clock-drift allowance of a Quorum, as a
// fraction of the lease (Redlock's 1%); 2ms are added to it.
const defaultClockDrift = hidden.ClockDrift

// driftFloor is added to every drift allowance: timers and clocks are
// coarse at the millisecond scale.
const driftFloor = 2 * time.Millisecond

// WithNodeTimeout bounds how long a quorum round waits for a node; one that
// has not answered counts as refusing, and what it grants later is given back.
// The default is a hundredth of the lease, from 50ms to 1s.
func WithNodeTimeout(d time.Duration) QuorumOption {
	return quorumOptionFunc(func(c *quorumConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: node timeout %v must be positive", ErrInvalidOption, d)
		}
		c.nodeTimeout = d
		return nil
	})
}

// WithClockDrift sets the clock-drift allowance as a fraction of the lease (0
// to 0.5): a quorum lease ends that much (plus 2ms) before the nodes' holds
// would expire. The default is 0.01 (Redlock's 1%).
func WithClockDrift(fraction float64) QuorumOption {
	return quorumOptionFunc(func(c *quorumConfig) error {
		if !(fraction >= 0 && fraction <= 0.5) {
			return fmt.Errorf("%w: clock drift %v must be between 0 and 0.5", ErrInvalidOption, fraction)
		}
		c.driftFactor = fraction
		return nil
	})
}

// NewQuorum returns a Quorum over clients, one per independent Redis
// deployment. They must be distinct, open, and share one Policy and lease
// time. Invalid input returns an error wrapping ErrInvalidOption, and nothing
// is sent to Redis.
func NewQuorum(clients []*Client, opts ...QuorumOption) (*Quorum, error) {
	cfg := quorumConfig{driftFactor: defaultClockDrift}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil QuorumOption", ErrInvalidOption)
		}
		if err := o.applyQuorum(&cfg); err != nil {
			return nil, err
		}
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: a quorum needs at least one client", ErrInvalidOption)
	}
	seen := make(map[*Client]bool, len(clients))
	for i, c := range clients {
		switch {
		case c == nil:
			return nil, fmt.Errorf("%w: client %d is nil", ErrInvalidOption, i)
		case seen[c]:
			return nil, fmt.Errorf("%w: client %d appears twice: each node needs its own Client", ErrInvalidOption, i)
		case c.settings().policy.name() != clients[0].settings().policy.name():
			return nil, fmt.Errorf("%w: client %d has policy %s, client 0 %s", ErrInvalidOption, i, c.settings().policy.name(), clients[0].settings().policy.name())
		case c.settings().leaseTime != clients[0].settings().leaseTime:
			return nil, fmt.Errorf("%w: client %d has lease time %v, client 0 %v", ErrInvalidOption, i, c.settings().leaseTime, clients[0].settings().leaseTime)
		case c.isClosing():
			return nil, fmt.Errorf("%w: client %d is closed", ErrInvalidOption, i)
		}
		seen[c] = true
	}
	lease := clients[0].settings().leaseTime
	if cfg.nodeTimeout == 0 {
		cfg.nodeTimeout = min(max(lease/100, 50*time.Millisecond), time.Second)
	}
	return &Quorum{
		clients:     append([]*Client(nil), clients...),
		majority:    len(clients)/2 + 1,
		nodeTimeout: cfg.nodeTimeout,
		driftFactor: cfg.driftFactor,
		leaseTime:   lease,
	}, nil
}

// drift is the allowance taken off a lease of d for clock drift.
func (q *Quorum) drift(d time.Duration) time.Duration {
	return time.Duration(float64(d)*q.driftFactor) + driftFloor
}

// Close waits for the node attempts still running after their round was
// decided, each giving back what it was granted. It does not close the
// Clients, nor end the quorum leases held. Calls after Close return ErrClosed.
func (q *Quorum) Close() error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.late.Wait()
	return nil
}

// background runs f, the give-back of holds no one waits for, on a
// goroutine that Close waits for; once Close has begun, it runs f at once.
func (q *Quorum) background(f func()) {
	if q.reserve() {
		go func() {
			defer q.late.Done()
			f()
		}()
		return
	}
	f()
}

// reserve counts a give-back in, for Close to wait for, unless Close has
// begun: the caller then runs it itself. A reserved give-back must end with
// late.Done.
func (q *Quorum) reserve() bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return false
	}
	q.late.Add(1)
	return true
}

// enter fails once Close has begun.
func (q *Quorum) enter() error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrClosed
	}
	return nil
}
