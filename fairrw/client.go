package fairrw

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// A Client hands out locks on one Redis deployment and renews their leases.
// Create it with New, and stop it with Shutdown or Close. A Client is safe
// for concurrent use and must not be copied.
type Client struct {
	// conf is what New fixed; the rest of the package reads it through
	// settings.
	conf settings
	tel  *telemetry
	// mutexTel instruments the Client's Mutex handles: the same
	// instruments, under the RLock format's policy name.
	mutexTel *telemetry
	owners   atomic.Uint64 // the owners drawn so far (newOwnerID)

	// What the connection settles: set by install (and untracked) before
	// the first call may use them, and not changed afterwards.
	rdb       rueidis.Client
	ownsRedis bool
	publish   string
	tracking  bool // invalidations of lock keys reach c.waits
	// cluster is true on a Redis Cluster client: a script call's keys must
	// then share one slot.
	cluster bool

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
	// so that Shutdown returns within its ctx (see Client.Shutdown).
	halt     context.Context
	stopHalt context.CancelFunc

	// conn is the first connection being made in the background, when New
	// could not make it (nil: New connected; see client_connect.go).
	conn *connector
	addr string // the Redis addresses, for errors

	waits      *wait.Registry
	renewer    *renewer
	janitor    *janitor
	background *tasks // work left by calls whose caller has gone (background.go)

	cohorts cohorts // Lock calls passing the write among themselves (cohort.go)
	// sharing: plain reads share a read hold (readshare.go), with cohorts
	// on and invalidations reaching shares.
	sharing bool
	shares  readShares
	// held are the owners that may hold something in Redis (owner.go).
	held heldOwners
}

// settings are what New fixed of a Client from its options: they never
// change afterwards, so that any part of the package may read them through
// Client.settings without a lock.
type settings struct {
	id            string
	policy        policyImpl
	leaseTime     time.Duration
	renewInterval time.Duration
	unlockTimeout time.Duration
	// cleanupGrace is how long a call whose ctx has ended still waits for
	// the clean-up it leaves (the constant cleanupGrace but in tests).
	cleanupGrace time.Duration
	// connectTimeout bounds a call's wait for a connection the Client
	// cannot make, when its ctx has no deadline (WithConnectTimeout).
	connectTimeout time.Duration
	// syncReplicas > 0: every acquire attempt waits for that many replicas
	// (WithSyncReplicas), at most syncTimeout.
	syncReplicas int64
	syncTimeout  time.Duration
	// wrap is WithRedisWrapper's: it wraps the rueidis client fairrw
	// builds (nil: none).
	wrap      func(rueidis.Client) rueidis.Client
	namespace string // WithNamespace: every lock name starts "<namespace>:"
	cohorting bool   // WithCohorts, under a fair policy of protocol 3 or later
}

// What the rest of the package reads of a Client. Each method is a single
// read, cheap enough for the acquire path.

// settings returns what New fixed of the Client (the lease time, the
// timeouts, the policy): what its handles, leases and renewals are sized by.
func (c *Client) settings() *settings { return &c.conf }

// telemetry returns the Client's instruments and logger, which every call
// reports to.
func (c *Client) telemetry() *telemetry { return c.tel }

// redis returns the rueidis client that the Client's commands go on. It is
// set once connected: a call uses it after await.
func (c *Client) redis() rueidis.Client { return c.rdb }

// publishCmd returns the command that wake-ups are published with
// (PUBLISH or SPUBLISH), which scripts and subscriptions must agree on.
func (c *Client) publishCmd() string { return c.publish }

// onCluster reports whether the Client talks to a Redis Cluster, where the
// keys of one script call must share a slot.
func (c *Client) onCluster() bool { return c.cluster }

// tracks reports whether invalidations of lock keys reach the Client
// (client tracking is on), so that a waiter may be woken by them.
func (c *Client) tracks() bool { return c.tracking }

// sharesReads reports whether plain reads may share a read hold
// (readshare.go): cohorts on and invalidations reaching the shares.
func (c *Client) sharesReads() bool { return c.sharing }

// closingDone returns a channel closed when the Client begins closing:
// waits select on it to end with ErrClosed.
func (c *Client) closingDone() <-chan struct{} { return c.closing }

// closingContext returns a context that ends when the Client begins
// closing, for context.AfterFunc.
func (c *Client) closingContext() context.Context { return c.closingCtx }

// haltContext returns a context that ends when a Shutdown is cut short:
// work still under way gives up at once.
func (c *Client) haltContext() context.Context { return c.halt }

// waiters returns the registry where the Client's waiters wait for their
// wake-ups.
func (c *Client) waiters() *wait.Registry { return c.waits }

// backgroundTasks returns the work left by calls whose caller has gone,
// which Shutdown waits for.
func (c *Client) backgroundTasks() *tasks { return c.background }

// heldOwners returns the owners that may hold something in Redis, which a
// Shutdown releases.
func (c *Client) heldOwners() *heldOwners { return &c.held }

// leaseRenewer returns the renewer that keeps the Client's leases alive.
func (c *Client) leaseRenewer() *renewer { return c.renewer }

// readShares returns the read holds that plain reads share.
func (c *Client) readShares() *readShares { return &c.shares }

// writeCohorts returns the Lock calls passing the write among themselves.
func (c *Client) writeCohorts() *cohorts { return &c.cohorts }

// newOwnerID returns a new owner id, drawn from the Client's counter in
// Redisson's "<uuid>:<long>" form.
func (c *Client) newOwnerID() string { return compat.Owner(c.conf.id, c.owners.Add(1)) }

// dropLatch queues the latch key of a release for the janitor to delete,
// without blocking: the release no longer needs it.
func (c *Client) dropLatch(key string) { c.janitor.drop(key) }

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
		tel:      tel,
		mutexTel: mutexTel,
		conf: settings{
			syncReplicas:   int64(cfg.syncReplicas),
			syncTimeout:    cfg.syncTimeout,
			id:             id,
			wrap:           cfg.wrap,
			policy:         cfg.policyImpl(),
			leaseTime:      cfg.leaseTime,
			renewInterval:  cfg.leaseTime / 3,
			unlockTimeout:  cfg.unlockTimeout,
			cleanupGrace:   cmp.Or(cfg.cleanupGrace, cleanupGrace),
			connectTimeout: cfg.connectTimeout,
			namespace:      cfg.namespace,
			cohorting:      cfg.cohorts && (cfg.protocol == 0 || cfg.protocol >= 3),
		},
		closing:  make(chan struct{}),
		finished: make(chan struct{}),
	}
	c.halt, c.stopHalt = context.WithCancel(context.Background())
	c.closingCtx, c.endClosing = context.WithCancel(context.Background())
	c.waits = wait.NewRegistry(wait.Config{
		Redis:     c.redis,
		Publish:   c.publishCmd,
		Closing:   c.closing,
		Halt:      c.halt,
		Tracking:  c.tracks,
		Connected: c.whenConnected,
	})
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
			c.sharing = c.conf.cohorting
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
	c.waits.OnInvalidations(messages)
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
	return c.handle(c.conf.policy, c.tel, name)
}

// Mutex returns a handle on the mutex name; every acquire on it is a new
// owner. An invalid name fails the handle's first call (ErrInvalidName).
func (c *Client) Mutex(name string) *Mutex {
	return &Mutex{rw: c.handle(mutexPolicy{}, c.mutexTel, name)}
}

// handle returns a handle on lock name, on the wire as policy says.
func (c *Client) handle(policy policyImpl, tel *telemetry, name string) *RWMutex {
	keys, err := policy.keys(name)
	if err == nil {
		err = c.inNamespace(name)
	}
	return &RWMutex{c: c, policy: policy, tel: tel, keys: keys, err: err}
}

// inNamespace checks that name lies in the Client's namespace, if any.
func (c *Client) inNamespace(name string) error {
	if c.conf.namespace == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(name, c.conf.namespace+":"); !ok || rest == "" {
		return fmt.Errorf("%w: %q is outside the Client's namespace: want %q followed by a name", ErrInvalidName, name, c.conf.namespace+":")
	}
	return nil
}

// Inspect reports who holds the lock name, for how long, who waits, and its
// fencing token, under any policy or as a Mutex; expired entries are left out.
// It returns by ctx's deadline, changes nothing in Redis and takes no lock, so
// its answer may be stale once returned. An invalid name returns
// ErrInvalidName; a key of another type at one of the lock's names, an error
// wrapping ErrPolicyMismatch.
func (c *Client) Inspect(ctx context.Context, name string) (*LockInfo, error) {
	if err := validateInspectName(name); err != nil {
		return nil, err
	}
	if err := c.inNamespace(name); err != nil {
		return nil, err
	}
	if err := c.enter(); err != nil {
		return nil, closedError(name)
	}
	defer c.leave()
	if err := c.await(ctx, name); err != nil {
		return nil, err
	}
	return c.inspect(ctx, name)
}

// inspect is Inspect of a valid name, within a call of the Client.
func (c *Client) inspect(ctx context.Context, name string) (*LockInfo, error) {
	fair := wire.Fair(name)
	var leaseKeys []string
	// A Redisson read's lease keys are named in the hash: the first call
	// learns them, a second reads them with it, a third covers holds taken
	// between the two; after that (holds keep changing) reads whose lease
	// keys were not read show the hash's time to live.
	for attempt := 1; ; attempt++ {
		req := wire.Inspect{Name: name, Keys: fair, LeaseKeys: leaseKeys}
		keys, args := req.Render()
		raw, err := boundedAs(c, ctx, "fairrw.inspect", func(ctx context.Context) (*inspectRaw, error) {
			return parseInspect(inspectScript.ExecReadOnly(ctx, c.rdb, keys, args))
		})
		if errors.Is(err, ErrPermission) {
			return nil, tag(fmt.Sprintf("fairrw: inspect %q: %s", name, reason(err)), err)
		}
		if err != nil {
			return nil, tag(fmt.Sprintf("fairrw: inspect %q: %s", name, unavailableReason(c.address(), err)), andEnded(ctx, err)...)
		}
		want := raw.leaseKeys(name)
		if attempt == 3 || !missing(want, leaseKeys) {
			return raw.describe(name, leaseKeys)
		}
		leaseKeys = want
	}
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
		c.waits.Close()
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

// Shutdown closes the Client gracefully, as a service stopping on purpose
// should. It fails later calls and waiting acquires with ErrClosed, giving
// back a grant that lands meanwhile. It ends every lease still held (Err wraps
// ErrLeaseLost and ErrClosed), then releases their holds in Redis, so that
// waiters everywhere are woken at once. It waits for work left to the
// background, then closes the Client as Close does.
//
// Shutdown returns by ctx's deadline, or soon after its cancellation, whatever
// Redis does; then the error wraps ctx.Err(), and what is not released expires
// with its lease. It returns nil when every hold was released or found gone.
// A concurrent call waits for the first; after Close it returns ErrClosed.
// When Shutdown returns, the Client is closed.
func (c *Client) Shutdown(ctx context.Context) error {
	if !c.beginClose(true) {
		select {
		case <-c.finished:
		case <-ctx.Done():
			return fmt.Errorf("fairrw: shutdown: %w", ctx.Err())
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.graceful {
			return ErrClosed
		}
		return c.shutdownErr
	}
	defer context.AfterFunc(ctx, c.stopHalt)()
	sum := shutdownSummary{start: time.Now()}
	tctx, span := c.tel.startShutdown(ctx)
	err := c.releaseAll(tctx, &sum)
	c.mu.Lock()
	c.shutdownErr = err
	c.mu.Unlock()
	c.finishClose(ctx)
	c.tel.endShutdown(tctx, span, sum, err)
	return err
}

// errShutdownLease is the error of the leases that Shutdown ended.
var errShutdownLease = tag("fairrw: lease lost: the Client shut down and released it", ErrLeaseLost, ErrClosed)

// releaseAll ends every lease still held, lets the calls under way finish
// (they may take further holds, or give back grants that landed late),
// ends the leases they left, and releases every owner's holds, telling
// sum what it did. Closing has begun, so no call starts any more.
func (c *Client) releaseAll(ctx context.Context, sum *shutdownSummary) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.halt, cancel)()
	owners := c.endLeases(make(map[*owner]Mode), sum)
	if c.drain(rctx) != nil {
		sum.owners, sum.left = len(owners), len(owners)
		return fmt.Errorf("fairrw: shutdown: calls under way not waited for, %d lock owners not released, left to expire: %w", len(owners), c.stopCause(ctx))
	}
	owners = c.endLeases(owners, sum)
	// And the owners whose holds Redis may keep although none of their
	// Leases is alive (see heldOwners).
	c.held.addTo(owners, time.Now())
	var failed, total int
	var err error
	if len(owners) > 0 {
		failed, total, err = c.releaseOwners(rctx, owners)
	}
	sum.owners, sum.left = total, failed
	// Give-backs and releases that calls left to the background (their
	// callers have gone) are done before the Client closes, within ctx.
	if c.background.wait(rctx) != nil {
		return fmt.Errorf("fairrw: shutdown: background give-backs or releases not confirmed, left to expire: %w", c.stopCause(ctx))
	}
	if failed == 0 {
		return nil // nothing left: whatever ctx says
	}
	if why := c.stopCause(ctx); why != nil {
		err = errors.Join(why, err)
	}
	return fmt.Errorf("fairrw: shutdown: %d of %d lock owners not released, left to expire: %w", failed, total, err)
}

// stopCause says why a Shutdown stopped before its releases were done:
// its ctx ended, or Close cut it short (nil: neither).
func (c *Client) stopCause(ctx context.Context) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case c.halt.Err() != nil:
		return errCutShort
	default:
		return nil
	}
}

// errCutShort is why a Shutdown stopped releasing when Close was called.
var errCutShort = tag("Close cut the Shutdown short", ErrClosed) // always wrapped: "fairrw: shutdown: ..."

// endLeases ends every lease still held (not one an Unlock is releasing)
// and adds its owner to owners, with the mode its release must name: the
// write if the owner holds it (its release then frees its reads too), else
// a read. sum counts the leases.
func (c *Client) endLeases(owners map[*owner]Mode, sum *shutdownSummary) map[*owner]Mode {
	for _, l := range c.renewer.all() {
		if !l.lose(tag(fmt.Sprintf("fairrw: lease lost: %q: the Client shut down and released it", l.lockName()), errShutdownLease), lossShutdown) {
			continue
		}
		sum.leases++
		if mode, ok := owners[l.own]; !ok || mode == Read {
			owners[l.own] = l.mode
		}
	}
	return owners
}

// drain waits for the calls under way to end, or for ctx to. Waiters were
// woken by closing; attempts and releases end within the unlock timeout,
// or at once when ctx ends (halt).
func (c *Client) drain(ctx context.Context) error {
	if c.inflight.Load() == 0 {
		return nil // closing began, so no call enters any more
	}
	drained := make(chan struct{})
	go func() {
		c.ops.Wait() // Close waits again, so this goroutine ends with it
		close(drained)
	}()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdownParallel bounds the releases in flight at once. rueidis pipelines
// concurrent commands on one connection, so this many releases cost about
// one round trip, and 10,000 holds do not start 10,000 goroutines.
const shutdownParallel = 64

// releaseOwners releases every hold of each owner, concurrently, and
// returns how many owners' releases did not get a definite answer, of
// how many, and the first such failure.
func (c *Client) releaseOwners(ctx context.Context, owners map[*owner]Mode) (failed, total int, first error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	slots := make(chan struct{}, shutdownParallel)
	for o, mode := range owners {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := o.releaseAll(ctx, mode); err != nil {
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed, len(owners), first
}

// installed returns what install keeps of rdb: rdb as WithRedisWrapper
// wraps it (a wrapper that returns nil is ignored, and logged: a Client
// without Redis would serve nothing). The spans of Redis calls learn
// whether every call goes to the one server they name.
func (c *Client) installed(rdb rueidis.Client) rueidis.Client {
	c.tel.servedBy(rdb.Mode() == rueidis.ClientModeStandalone)
	if c.conf.wrap == nil {
		return rdb
	}
	if w := c.conf.wrap(rdb); w != nil {
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

// followUp retries try in the background, with a growing pause, until it
// reports done, until moot, or until the Client closes. Each try is given a
// context bounded by the unlock timeout, which also ends when the Client
// closes.
func (c *Client) followUp(m *RWMutex, what string, moot time.Time, try func(ctx context.Context) bool) {
	c.background.run(func(ctx context.Context) {
		c.tel.background(1)
		defer c.tel.background(-1)
		name := c.tel.logName(m.keys.name)
		// Left behind by an outage, it is one of many: the outage's own
		// line says it all (fairrw.background.pending counts them).
		warn, info := slog.LevelWarn, slog.LevelInfo
		if c.tel.health.down.Load() {
			warn, info = slog.LevelDebug, slog.LevelDebug
		}
		c.tel.log.Log(ctx, warn, "fairrw: Redis did not confirm in time; going on in the background", append(name, "what", what, "until", moot)...)
		backoff := wait.NewBackoff(wait.MinRetryBackoff, followUpMaxBackoff)
		once := func() bool {
			ctx, cancel := context.WithTimeout(ctx, c.conf.unlockTimeout)
			defer cancel()
			return try(ctx)
		}
		for time.Now().Before(moot) {
			if once() {
				c.tel.log.Log(ctx, info, "fairrw: confirmed in the background", append(name, "what", what)...)
				return
			}
			if backoff.Wait(ctx, nil) != nil {
				return
			}
		}
		c.tel.log.Log(ctx, warn, "fairrw: not confirmed, and moot: what it would change has run out in Redis", append(name, "what", what)...)
	})
}

// How long a command may take to reach Redis, all told.
//
// A command whose reply is lost is retried, and any copy of it may still
// reach Redis much later: Redis was paused, a connection stalled in the
// kernel's buffers. No latch in Redis can outlive every such delay, so the
// scripts use time instead (lua/common.lua): a copy that reaches Redis more
// than acceptWindow after it was first sent takes nothing and changes
// nothing. The client retries one command for retryWindow only, and a give-up
// marker lives for giveUpWindow, so that a late copy meets either the marker
// or the window. (A give-up itself is never refused as late: it only
// removes, and is right whenever it runs.) What that assumes: the client's and Redis's wall
// clocks differ by less than the unlock timeout (the margin between the
// windows). A Redis clock that runs ahead by more makes acquires fail with
// ErrClockSkew rather than break exclusion.
//
// All three derive from the unlock timeout, the time an Unlock already
// waits for Redis: 5s, 10s and 15s with the defaults.

// retryWindow is how long the client sends copies of one command.
func (c *Client) retryWindow() time.Duration { return c.conf.unlockTimeout }

// acceptWindow is how long after its first send Redis still accepts a copy.
func (c *Client) acceptWindow() time.Duration { return 2 * c.conf.unlockTimeout }

// giveUpWindow is how long a give-up marker lives: past the accept window
// by the clock margin.
func (c *Client) giveUpWindow() time.Duration { return 3 * c.conf.unlockTimeout }
