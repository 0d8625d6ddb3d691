package fairrw

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// What a Client knows of its Redis's reachability, for an operator: an
// outage is one log line when it begins and one when it ends, whatever
// number of calls, rounds and dials fail meanwhile; fairrw.redis.unreachable
// is 1 while it lasts. Calls report their outcome (Client.bounded, the
// renewal rounds); the rueidis client a Client builds also reports every
// dial and every connection's first answer and close, by address (the
// connections' own story, in fairrw.redis.dials, .connections and
// .reconnects).
//
// An outage begins with the first call or dial that fails for want of
// Redis (refused, reset, unanswered for slowAnswer, LOADING...), and ends
// once Redis answers and nothing failed for recoverAfter: on a cluster with
// a shard down the healthy shards' answers do not end it while the dead
// shard's calls keep failing.

// recoverAfter is how long Redis must have answered without a failure for
// an outage to end.
const recoverAfter = time.Second

// redisHealth is a Client's view of its Redis's reachability (shared by its
// telemetries).
type redisHealth struct {
	t    *telemetry
	down atomic.Bool // read on every answered call: the rest under mu

	// lastFail (UnixNano) and failures, the failures reported during the
	// outage, are written without mu while the outage lasts: every call
	// that fails for want of Redis reports it, hundreds at once when Redis
	// stalls, and on a starved machine a lock they all took held them up
	// seconds past their deadlines (a loaded machine's conformance run).
	lastFail atomic.Int64
	failures atomic.Int64

	mu       sync.Mutex
	closed   bool
	since    time.Time // the outage's beginning
	answered time.Time // the last answer during the outage
	recheck  *time.Timer
	// renewFailures counts the renewal rounds failing in a row for a
	// reason other than an outage (logged once).
	renewFailures int
	// lastRefusal is when a call refused by Redis (ErrPermission) was
	// last logged, and refusals how many were not since.
	lastRefusal time.Time
	refusals    int
	addrs       map[string]*addrHealth
}

// addrHealth is what a Client knows of one Redis address it dials.
type addrHealth struct {
	attrs    []attribute.KeyValue // server.address, server.port, fairrw.deployment
	conn     measure
	answered bool // a connection to it answered once: the next is a reconnect
}

func newRedisHealth(t *telemetry) *redisHealth {
	return &redisHealth{t: t, addrs: make(map[string]*addrHealth)}
}

// redisAnswered records that Redis answered a call. It is on every call's
// path: one atomic load while Redis is reachable.
func (t *telemetry) redisAnswered() {
	h := t.health
	if !h.down.Load() {
		return
	}
	h.mu.Lock()
	if h.closed || !h.down.Load() {
		h.mu.Unlock()
		return
	}
	h.answered = time.Now()
	h.settleLocked()
}

// settleLocked ends the outage if Redis answered since the last failure,
// which was recoverAfter ago, or checks again when it will be. Call it
// with h.mu held; it unlocks h.mu.
func (h *redisHealth) settleLocked() {
	lastFail := time.Unix(0, h.lastFail.Load())
	if !h.answered.After(lastFail) || h.recheck != nil {
		h.mu.Unlock()
		return
	}
	quiet := time.Since(lastFail)
	if quiet < recoverAfter {
		h.recheck = time.AfterFunc(recoverAfter-quiet, h.settle)
		h.mu.Unlock()
		return
	}
	h.down.Store(false)
	lasted, failures := time.Since(h.since).Seconds(), h.failures.Load()
	h.mu.Unlock()
	t := h.t
	t.inst.redisUnreachable.Add(context.Background(), -1, t.deploymentOnly.add...)
	t.log.Log(context.Background(), slog.LevelInfo, "fairrw: Redis reachable again", "addr", t.addr,
		"deployment", t.deployment, "outage", lasted, "failures", failures)
}

// settle is settleLocked on its timer.
func (h *redisHealth) settle() {
	h.mu.Lock()
	h.recheck = nil
	if h.closed || !h.down.Load() {
		h.mu.Unlock()
		return
	}
	h.settleLocked()
}

// isClosed reports whether the Client stopped following Redis.
func (h *redisHealth) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// redisFailed records that a call or a dial to addr failed for want of
// Redis (err says why); the first of an outage is logged, with ctx, the
// call's (a handler may take its trace from it).
func (t *telemetry) redisFailed(ctx context.Context, addr string, err error) {
	h := t.health
	now := time.Now()
	if h.down.Load() {
		// Counted in the outage under way, without mu (see lastFail).
		h.lastFail.Store(now.UnixNano())
		h.failures.Add(1)
		if h.down.Load() {
			return
		}
		// The outage ended meanwhile (its end was decided before this
		// failure): this one begins the next.
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.lastFail.Store(now.UnixNano())
	if h.down.Load() {
		h.failures.Add(1)
		h.mu.Unlock()
		return
	}
	h.down.Store(true)
	h.since = now
	h.failures.Store(1)
	h.mu.Unlock()
	t.inst.redisUnreachable.Add(context.Background(), 1, t.deploymentOnly.add...)
	k := kindOf(err)
	if k != kindRedisTimeout && k != kindUnavailable {
		k = kindUnavailable // a dial's own error (TLS, DNS): no answer all the same
	}
	t.log.Log(ctx, slog.LevelWarn, "fairrw: Redis unreachable", "addr", addr, "deployment", t.deployment,
		"error.type", k.info().errorType, "error", t.anonymous(err))
}

// renewalFailing records a renewal round that failed for a reason other
// than an outage (a refused script, say), and reports whether it is the
// first of a run: the one to log.
func (h *redisHealth) renewalFailing(errKind) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.renewFailures++
	return h.renewFailures == 1
}

// refusalLogEvery is how often a call that Redis refused (ErrPermission)
// is logged at most: a password rotated under a running service refuses
// every call, and one line says it.
const refusalLogEvery = 10 * time.Second

// refusalDue reports whether a call refused by Redis is to be logged now,
// and how many were not since the last that was.
func (h *redisHealth) refusalDue() (bool, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lastRefusal.IsZero() && time.Since(h.lastRefusal) < refusalLogEvery {
		h.refusals++
		return false, 0
	}
	n := h.refusals
	h.lastRefusal, h.refusals = time.Now(), 0
	return true, n
}

// renewalConfirmed records a round that succeeded, and returns how many
// failed in a row before it.
func (h *redisHealth) renewalConfirmed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.renewFailures
	h.renewFailures = 0
	return n
}

// close stops following Redis: an outage under way ends without a word
// (the Client is gone, and so is its part of fairrw.redis.unreachable).
func (h *redisHealth) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if h.recheck != nil {
		h.recheck.Stop()
		h.recheck = nil
	}
	if h.down.Swap(false) {
		h.t.inst.redisUnreachable.Add(context.Background(), -1, h.t.deploymentOnly.add...)
	}
}

// address returns what the Client knows of addr, made on first use.
func (h *redisHealth) address(addr string) *addrHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.addrs[addr]
	if a == nil {
		a = &addrHealth{attrs: []attribute.KeyValue{attrDeployment.String(h.t.deployment)}}
		if host, port, ok := splitAddress(addr); ok {
			a.attrs = append(a.attrs, semconv.ServerAddress(host), semconv.ServerPort(port))
		} else {
			a.attrs = append(a.attrs, semconv.ServerAddress(addr))
		}
		a.conn = newMeasure(a.attrs...)
		h.addrs[addr] = a
	}
	return a
}

// errNoHandshake is a connection that closed before Redis answered on it:
// a server that accepts connections but does not serve (paused, or
// overloaded), or a handshake refused before its reply.
var errNoHandshake = errors.New("fairrw: the connection closed before Redis answered on it")

// redisDialFailed records a dial to addr that failed, or a connection
// that closed before Redis answered on it; closing, nothing (a dial that
// closing cut short is no failure of Redis's).
func (t *telemetry) redisDialFailed(ctx context.Context, addr string, err error) {
	if t.health.isClosed() {
		return
	}
	a := t.health.address(addr)
	k := kindOf(err)
	if k != kindRedisTimeout {
		k = kindUnavailable
	}
	attrs := append(a.attrs[:len(a.attrs):len(a.attrs)], semconv.ErrorTypeKey.String(k.info().errorType))
	t.inst.redisDials.Add(context.Background(), 1, metric.WithAttributes(attrs...))
	t.redisFailed(ctx, addr, err)
}

// redisConnected records a connection opened to addr.
func (t *telemetry) redisConnected(addr string) {
	t.inst.redisConnections.Add(context.Background(), 1, t.health.address(addr).conn.add...)
}

// redisHandshake records the first answer on a connection to addr: the
// dial succeeded, and Redis answers there again if it did before.
func (t *telemetry) redisHandshake(addr string) {
	a := t.health.address(addr)
	t.inst.redisDials.Add(context.Background(), 1, a.conn.add...)
	t.health.mu.Lock()
	again := a.answered
	a.answered = true
	t.health.mu.Unlock()
	if again {
		t.inst.redisReconnects.Add(context.Background(), 1, a.conn.add...)
	}
	t.redisAnswered()
}

// redisDisconnected records a connection to addr closed; one that closed
// before Redis answered on it is a failed dial.
func (t *telemetry) redisDisconnected(addr string, answered bool) {
	t.inst.redisConnections.Add(context.Background(), -1, t.health.address(addr).conn.add...)
	if !answered {
		t.redisDialFailed(context.Background(), addr, errNoHandshake)
	}
}

// dialer returns the dial function of opt (rueidis's own, unless opt sets
// one) wrapped to report every dial and connection (see redisHealth).
func (t *telemetry) dialer(opt *rueidis.ClientOption) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
	dialCtx := opt.DialCtxFn
	dialFn := opt.DialFn // a caller's DialFn, which rueidis still honours, must keep working
	noDelayOff := opt.DisableTCPNoDelay
	return func(ctx context.Context, addr string, dialer *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		var conn net.Conn
		var err error
		start := time.Now()
		switch {
		case dialCtx != nil:
			conn, err = dialCtx(ctx, addr, dialer, cfg)
		case dialFn != nil:
			conn, err = dialFn(addr, dialer, cfg)
		case cfg != nil:
			conn, err = (&tls.Dialer{NetDialer: dialer, Config: cfg}).DialContext(ctx, "tcp", addr)
		default:
			conn, err = dialer.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			// rueidis dials with the ctx of the command that found no
			// connection: a dial that its ctx cut short within slowAnswer
			// (a release's 20 ms grace, on a machine that ran it late) says
			// nothing of Redis, as a call would not (endCall).
			if !cutShort(ctx) || time.Since(start) >= t.slowAnswer {
				t.redisDialFailed(ctx, addr, err)
			}
			return nil, err
		}
		if noDelayOff {
			disableNoDelay(conn) // rueidis does it, but cannot see through the wrapper
		}
		t.redisConnected(addr)
		return &observedConn{Conn: conn, t: t, addr: addr}, nil
	}
}

// cutShort reports whether ctx has ended or its deadline has passed. A
// dial or call that ctx's deadline cut short returns when the net
// package's own timer for that deadline fires ("i/o timeout"), which can
// run before the timer that marks ctx done: ctx.Err() alone would then
// take the caller's deadline for Redis's failure (a Lock's 500 ms wait,
// whose subscription's dial it ended, reported as an outage on a loaded
// machine).
func cutShort(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// disableNoDelay turns Nagle's algorithm back on, as rueidis does for
// DisableTCPNoDelay.
func disableNoDelay(conn net.Conn) {
	if c, ok := conn.(*tls.Conn); ok {
		conn = c.NetConn()
	}
	if c, ok := conn.(*net.TCPConn); ok {
		_ = c.SetNoDelay(false)
	}
}

// observedConn is a connection to Redis that reports its first answer and
// its close.
type observedConn struct {
	net.Conn
	t        *telemetry
	addr     string
	answered atomic.Bool
	closed   atomic.Bool
}

// Read reports the first bytes Redis sends: its answer to the handshake.
func (c *observedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.answered.Load() && c.answered.CompareAndSwap(false, true) {
		c.t.redisHandshake(c.addr)
	}
	return n, err
}

// Close reports the connection closed, once.
func (c *observedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.t.redisDisconnected(c.addr, c.answered.Load())
	}
	return c.Conn.Close()
}
