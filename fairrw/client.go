package fairrw

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
)

// A Client hands out locks on one Redis deployment and renews their leases.
// Create it with New, and stop it with Shutdown or Close. A Client is safe
// for concurrent use and must not be copied.
type Client struct {
	id            string
	rdb           rueidis.Client
	ownsRedis     bool
	policy        policyImpl
	leaseTime     time.Duration
	renewInterval time.Duration
	unlockTimeout time.Duration
	// connectTimeout bounds a call's wait for a connection the Client
	// cannot make, when its ctx has no deadline (WithConnectTimeout).
	connectTimeout time.Duration
	publish        string
	tracking       bool // invalidations of lock keys reach c.waits
	// wrap is WithRedisWrapper's: it wraps the rueidis client fairrw
	// builds (nil: none).
	wrap      func(rueidis.Client) rueidis.Client
	namespace string // WithNamespace: every lock name starts "<namespace>:"
	owners    atomic.Uint64
	// cluster is true on a Redis Cluster client: a script call's keys must
	// then share one slot.
	cluster bool
	tel     *telemetry
	// mutexTel instruments the Client's Mutex handles: the same
	// instruments, under the RLock format's policy name.
	mutexTel *telemetry
	// syncReplicas > 0: every acquire attempt waits for that many replicas
	// (WithSyncReplicas), at most syncTimeout.
	syncReplicas int64
	syncTimeout  time.Duration

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	// closingCtx ends when closing does (for context.AfterFunc).
	closingCtx context.Context
	endClosing context.CancelFunc
	ops        sync.WaitGroup // calls in progress; Close waits for them
	// inflight counts ops, so that a Shutdown whose ctx ended already sees
	// that no call is under way (a WaitGroup has no count to read).
	inflight atomic.Int64
	// graceful: closing began with Shutdown, whose result is shutdownErr
	// (both guarded by mu). finished closes once everything is closed.
	graceful    bool
	shutdownErr error
	finished    chan struct{}
	// halt ends when a Shutdown is cut short (its ctx ended, or Close was
	// called): the releases and attempts still under way give up at once,
	// so that Shutdown returns within its ctx (see shutdown.go).
	halt     context.Context
	stopHalt context.CancelFunc

	// conn is the first connection being made in the background, when New
	// could not make it (nil: New connected; see client_connect.go).
	conn *connector
	addr string // the Redis addresses, for errors

	waits      *waitRegistry
	renewer    *renewer
	janitor    *janitor
	background *tasks // work left by calls whose caller has gone (background.go)

	cohorting bool    // WithCohorts, under a fair policy of protocol 3 or later
	cohorts   cohorts // Lock calls passing the write among themselves (cohort.go)
	// sharing: plain reads share a read hold (readshare.go), with cohorts
	// on and invalidations reaching shares.
	sharing bool
	shares  readShares
	// held are the owners that may hold something in Redis (owner.go).
	held heldOwners
}

// New returns a Client. It needs one of WithClient, WithClientOption and
// WithURL. An invalid option (a port out of range, a URL without a scheme)
// returns an error wrapping ErrInvalidOption, and nothing is sent. New
// waits up to a second (at most the connect timeout) for its first
// connection, so that what no retry cures is its error: wrong credentials
// (ErrPermission), TLS against a server without it or the reverse
// (ErrInvalidOption), an ACL refusing what the Client needs. When Redis
// cannot be reached or cannot serve yet (down, loading its data, busy in
// a script, a TLS handshake that stalls, a host not yet in DNS), New
// returns a Client that connects in the background, with backoff, logging
// the outage once; calls wait for it within their ctx, or the connect
// timeout when their ctx has no deadline, and then fail with
// ErrUnavailable (docs/operations.md, Connecting).
func New(opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	if (cfg.client == nil) == (cfg.clientOption == nil) {
		return nil, fmt.Errorf("%w: give exactly one of WithClient, WithClientOption and WithURL", ErrInvalidOption)
	}
	if cfg.client != nil && cfg.wrap != nil {
		return nil, fmt.Errorf("%w: WithRedisWrapper applies to the rueidis client fairrw builds; wrap yours before WithClient", ErrInvalidOption)
	}
	if o := cfg.clientOption; o != nil && cfg.tracking && !o.DisableCache && !o.AlwaysRESP2 && (o.PipelineMultiplex > 0 || o.DisableAutoPipelining) {
		return nil, fmt.Errorf("%w: PipelineMultiplex > 0 and DisableAutoPipelining send a Client's calls on connections other than the one its client tracking answers on, "+
			"which would let a read share a hold after the Client saw a writer wait; set DisableCache with them", ErrInvalidOption)
	}
	id := uuid.NewString()
	tcfg := telemetryConfig{tracer: orGlobalTracer(cfg.tracer), meter: orGlobalMeter(cfg.meter), log: orSilent(cfg.logger),
		policy: cfg.policy.String(), clientID: id, show: cfg.show, roundTrips: !cfg.noRoundTrips,
		slowAnswer: cmp.Or(cfg.slowAnswer, slowAnswer)}
	tcfg.addr, tcfg.single = redisAddress(&cfg)
	tcfg.deployment = cfg.deployment
	if tcfg.deployment == "" {
		tcfg.deployment = tcfg.addr
	}
	tel, err := newTelemetry(tcfg)
	if err != nil {
		return nil, err
	}
	mutexTel := tel.forPolicy(mutexPolicyName)
	c := &Client{
		tel:            tel,
		mutexTel:       mutexTel,
		syncReplicas:   int64(cfg.syncReplicas),
		syncTimeout:    cfg.syncTimeout,
		id:             id,
		wrap:           cfg.wrap,
		policy:         cfg.policyImpl(),
		leaseTime:      cfg.leaseTime,
		renewInterval:  cfg.leaseTime / 3,
		unlockTimeout:  cfg.unlockTimeout,
		connectTimeout: cfg.connectTimeout,
		namespace:      cfg.namespace,
		cohorting:      cfg.cohorts && (cfg.protocol == 0 || cfg.protocol >= 3),
		closing:        make(chan struct{}),
		finished:       make(chan struct{}),
	}
	c.halt, c.stopHalt = context.WithCancel(context.Background())
	c.closingCtx, c.endClosing = context.WithCancel(context.Background())
	c.waits = newWaitRegistry(c)
	c.background = newTasks()
	if cfg.client != nil {
		if err := c.use(cfg.client, cfg.publish); err != nil {
			return nil, err
		}
	} else {
		opt := *cfg.clientOption
		c.warnInsecureTLS(opt)
		probe := opt                     // the caller's dialer, if any: probed as it is (tls.go)
		opt.DialCtxFn = tel.dialer(&opt) // every dial and connection reported (redis_health.go)
		if cfg.tracking && !opt.DisableCache && !opt.AlwaysRESP2 {
			// rueidis's default OPTIN tracking follows only the keys read by
			// DoCache: waiters arm it on the lock key (see arm), so that an
			// uncontended lock pays nothing for tracking.
			opt.OnInvalidations = c.onInvalidations
			// One connection per node: an invalidation comes on the
			// connection of the tracked read that armed it, and rueidis
			// otherwise spreads calls over PipelineMultiplex connections
			// (2 on a 2-core machine), so that an answer (an Inspect that
			// shows a writer waiting, an attempt that queued) could come
			// before the invalidation of what it saw, and a read then share
			// a hold the Client knew a writer waited for. On one connection
			// Redis sends the invalidation first. Measured: no loss of
			// throughput, contended or not (bench, 2026-11-28).
			opt.PipelineMultiplex = -1
			c.tracking = true
			c.sharing = c.cohorting
		}
		if err := c.connect(opt, probe, cfg.publish); err != nil {
			return nil, err
		}
	}
	c.renewer = newRenewer(c)
	return c, nil
}

// onInvalidations is the rueidis client-tracking hook: the waiters, the
// shared read holds and the cohorts learn of the keys that changed (nil:
// any key may have).
func (c *Client) onInvalidations(messages []rueidis.RedisMessage) {
	c.shares.invalidated(messages)
	c.cohorts.invalidated(messages)
	c.waits.onInvalidations(messages)
}

// resolvePublish picks the publish command Java Redisson would use: SPUBLISH
// on a Redis 7+ cluster, PUBLISH everywhere else.
func resolvePublish(rdb rueidis.Client, p publishCommand) (string, error) {
	if p != publishAuto {
		return string(p), nil
	}
	if rdb.Mode() != rueidis.ClientModeCluster {
		return compat.Publish, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rdb.Do(ctx, rdb.B().Info().Build().Pin()).ToString()
	if err != nil {
		return "", fmt.Errorf("fairrw: read server version: %w", err)
	}
	if majorVersion(info) >= 7 {
		return compat.SPublish, nil
	}
	return compat.Publish, nil
}

func majorVersion(info string) int {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			major, _, _ := strings.Cut(v, ".")
			n, _ := strconv.Atoi(major)
			return n
		}
	}
	return 0
}

// RWMutex returns a handle on the lock name; every acquire on it is a new
// owner. An invalid name fails the handle's first call (ErrInvalidName).
func (c *Client) RWMutex(name string) *RWMutex {
	return c.handle(c.policy, c.tel, name)
}

// handle returns a handle on lock name, on the wire as policy says.
func (c *Client) handle(policy policyImpl, tel *telemetry, name string) *RWMutex {
	keys, err := policy.keys(name)
	if err == nil {
		err = c.inNamespace(name)
	}
	return &RWMutex{c: c, policy: policy, tel: tel, keys: keys, err: err}
}

// Close stops the Client at once, as a crash would, and sends nothing.
// Waiters get ErrClosed, and every lease still held ends: Err wraps
// ErrLeaseLost and ErrClosed. Their holds expire in Redis with their lease.
// Close may be called more than once, and cuts a Shutdown short. It returns
// once the calls under way, each bounded by its ctx or the unlock timeout,
// have ended. With a rueidis client of the caller's (WithClient), it waits
// at most a quarter second for the Redis commands those calls left behind:
// one that rueidis holds while it connects to a server that does not
// answer ends when rueidis gives it up.
func (c *Client) Close() error {
	if c.beginClose(false) {
		c.finishClose(context.Background())
		return nil
	}
	c.mu.Lock()
	graceful := c.graceful
	c.mu.Unlock()
	if graceful {
		c.stopHalt()
	}
	<-c.finished
	return nil
}

// beginClose makes every later call fail with ErrClosed and wakes every
// waiter. It reports whether this call began closing the Client.
func (c *Client) beginClose(graceful bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.closed, c.graceful = true, graceful
	close(c.closing)
	c.endClosing()
	return true
}

// finishClose waits for the calls under way, ends every lease still held,
// stops every goroutine of the Client and closes the rueidis client it
// built.
//
// It returns when that is done or when ctx ends, whichever is first (a
// Shutdown's ctx: closing connections to a Redis that does not answer
// takes rueidis about a second each); the rest goes on, and finished
// closes when it is done.
func (c *Client) finishClose(ctx context.Context) {
	c.ops.Wait()
	c.stopConnecting()
	c.tel.health.close() // what closing does to connections is no outage
	// Every lease ends now, whatever the rest waits for: none outlives the
	// call.
	c.renewer.endAll(c.closeCause())
	go func() {
		// A rueidis client of the caller's is not ours to close: a command
		// it holds while connecting to a server that does not answer is
		// not waited for past a grace. Ours is closed once every command
		// we sent has ended (such a command ends when rueidis gives up the
		// connection): a connection made after its Close would stay open.
		c.background.close(!c.ownsRedis)
		c.renewer.close(c.closeCause())
		c.waits.close()
		if c.janitor != nil { // nil: never connected
			c.janitor.close()
		}
		if c.ownsRedis && c.rdb != nil {
			c.rdb.Close()
		}
		c.stopHalt()
		close(c.finished)
	}()
	select {
	case <-c.finished:
	case <-ctx.Done():
	}
}

// installed returns what install keeps of rdb: rdb as WithRedisWrapper
// wraps it (a wrapper that returns nil is ignored, and logged: a Client
// without Redis would serve nothing). The spans of Redis calls learn
// whether every call goes to the one server they name.
func (c *Client) installed(rdb rueidis.Client) rueidis.Client {
	c.tel.servedBy(rdb.Mode() == rueidis.ClientModeStandalone)
	if c.wrap == nil {
		return rdb
	}
	if w := c.wrap(rdb); w != nil {
		return w
	}
	c.tel.log.Error("fairrw: WithRedisWrapper returned nil; the rueidis client is used unwrapped")
	return rdb
}

// closeCause is the cause of the leases that closing ends: Shutdown's
// (released, no loss), or Close's (lost).
func (c *Client) closeCause() lossCause {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.graceful {
		return lossShutdown
	}
	return lossClosed
}

// redisAddress returns the Redis addresses cfg names, comma-separated,
// and whether every call goes to that one server (a single address, not a
// Sentinel's nor a cluster's seed). With WithClient they are its nodes.
func redisAddress(cfg *config) (string, bool) {
	if opt := cfg.clientOption; opt != nil {
		return strings.Join(opt.InitAddress, ","), len(opt.InitAddress) == 1 && opt.Sentinel.MasterSet == ""
	}
	nodes := clientNodes(cfg.client)
	return strings.Join(nodes, ","), len(nodes) == 1 && cfg.client.Mode() == rueidis.ClientModeStandalone
}

// clientNodes returns the sorted addresses of rdb's nodes (none for a
// stand-in client without them).
func clientNodes(rdb rueidis.Client) (nodes []string) {
	defer func() {
		if recover() != nil {
			nodes = nil
		}
	}()
	return slices.Sorted(maps.Keys(rdb.Nodes()))
}

// enter registers a call in progress, or fails once Close has begun.
func (c *Client) enter() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.ops.Add(1)
	c.inflight.Add(1)
	return nil
}

func (c *Client) leave() {
	c.inflight.Add(-1)
	c.ops.Done()
}

func (c *Client) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// definite reports whether err is an answer from Redis (the script ran, or
// was refused, as a whole) rather than a failure whose outcome is unknown
// or a refusal that passes (see transient), both of which are retried.
func definite(err error) bool {
	if errors.Is(err, ErrPolicyMismatch) || errors.Is(err, ErrPermission) {
		return true
	}
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && !transient(rerr)
}

// unsent reports whether err is a failure to connect: the command never
// left this process, so it changed nothing in Redis. (A command written to
// a connection that broke afterwards fails otherwise, and may have run.)
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// errClosedLease is the error of the leases still held when Close runs.
var errClosedLease = tag("fairrw: lease lost: the client closed", ErrLeaseLost, ErrClosed)
