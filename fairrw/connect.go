package fairrw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// ErrUnavailable is returned, wrapping the ctx's error and naming the
// address, by a call whose ctx ended before the Client first reached Redis,
// or while Redis was unavailable: its connection refused or broken, a round
// trip unanswered for 100 ms or more, or (a waiting Lock) while the Client
// found Redis unreachable. A lock-wait timeout wraps the ctx's error only.
var ErrUnavailable = errors.New("fairrw: Redis unavailable")

// Connection backoff while Redis is away at New, and how long New waits
// for its first connection before it returns a Client that goes on
// connecting in the background (a frozen server holds a dial for the
// whole dial timeout).
const (
	minConnectBackoff = 50 * time.Millisecond
	maxConnectBackoff = 2 * time.Second
	newWait           = time.Second
)

// connector is the state of a Client's first connection, made in the
// background.
type connector struct {
	addr string // the addresses it dials, for errors
	tls  bool   // it dials with TLS
	// ownDial: the caller's DialCtxFn or DialFn dials, not rueidis (the
	// Client's own wrapper, telemetry.dialer, does not count).
	ownDial bool
	ready   chan struct{} // closed once connected (c.rdb and the rest set)
	// failed is closed when connecting failed for good (err says why).
	failed chan struct{}
	stop   context.CancelFunc
	// Guarded by Client.mu.
	lastErr   error
	err       error // the error that failed it for good
	abandoned bool  // the Client closed: a client made now is closed at once
}

// connect makes the Client's rueidis client from opt, on a goroutine of its
// own. New waits for its first try up to newWait: a success or an error
// that waiting would not cure (an option rueidis refuses, a server without
// client tracking, a wrong password, TLS against a server without it) is
// New's answer; Redis that cannot be reached now (see ErrUnavailable) is
// tried again in the background until it answers or the Client closes.
func (c *Client) connect(opt rueidis.ClientOption, ownDial bool, publish publishCommand) error {
	ctx, stop := context.WithCancel(context.Background())
	c.conn = &connector{addr: strings.Join(opt.InitAddress, ","), tls: opt.TLSConfig != nil, ownDial: ownDial,
		ready: make(chan struct{}), failed: make(chan struct{}), stop: stop}
	c.addr = c.conn.addr
	go c.redial(ctx, opt, publish)
	t := time.NewTimer(newWait)
	defer t.Stop()
	select {
	case <-c.conn.ready:
		c.conn = nil // connected: no call needs to wait
		return nil
	case <-c.conn.failed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.conn.err
	case <-t.C:
		c.tel.log.Warn("fairrw: Redis unavailable at New; connecting in the background", "addr", c.conn.addr)
		return nil
	}
}

// redial tries to connect until it succeeds, fails for good, or the Client
// closes.
func (c *Client) redial(ctx context.Context, opt rueidis.ClientOption, publish publishCommand) {
	conn := c.conn
	backoff := minConnectBackoff
	for first := true; ; first = false {
		if !first && sleepCtx(ctx, nil, backoff) != nil {
			return
		}
		rdb, p, err := dial(opt, conn.ownDial, publish)
		if refusesTracking(err, opt) {
			// The ACL user may not use client tracking (a tenant on a
			// shared Redis, docs/acl.md): connect without it, now and on
			// every later try.
			opt = withoutTracking(opt)
			rdb, p, err = dial(opt, conn.ownDial, publish)
		}
		c.mu.Lock()
		switch {
		case conn.abandoned:
			c.mu.Unlock()
			if rdb != nil {
				rdb.Close()
			}
			return
		case err == nil:
			c.install(rdb, p)
			untracked := opt.DisableCache && c.untracked()
			c.ownsRedis = true
			close(conn.ready)
			c.mu.Unlock()
			if untracked {
				c.tel.log.Info("fairrw: the ACL user may not use CLIENT TRACKING: connected without it (waiters wake by pub/sub, reads do not share a hold; docs/acl.md)", "addr", conn.addr)
			}
			if !first {
				c.tel.log.Info("fairrw: connected to Redis", "addr", conn.addr)
			}
			return
		case !unavailable(err, conn.tls):
			conn.err = err
			close(conn.failed)
			c.mu.Unlock()
			c.tel.log.Error("fairrw: cannot connect to Redis", "addr", conn.addr, "error", err)
			return
		}
		conn.lastErr = err
		c.mu.Unlock()
		backoff = min(backoff*2, maxConnectBackoff)
	}
}

// dial makes a rueidis client and learns how to publish on it. ownDial
// says that the caller's dial function dials (see connector).
func dial(opt rueidis.ClientOption, ownDial bool, publish publishCommand) (rueidis.Client, string, error) {
	addr := strings.Join(opt.InitAddress, ",")
	rdb, err := rueidis.NewClient(opt)
	if refusedByACL(err) {
		// Before ErrNoCache: rueidis reports a refused CLIENT TRACKING as
		// a server without tracking. Waiting does not cure a refusal.
		return nil, "", tag(fmt.Sprintf("fairrw: connect to %s: %s", addr, reason(permissionError(err))), ErrPermission, err)
	}
	if errors.Is(err, rueidis.ErrNoCache) {
		// Said here because the first place users meet it is an
		// in-process test server, or a managed Redis.
		return nil, "", fmt.Errorf("fairrw: connect: %w (a server without client tracking or RESP3, such as miniredis "+
			"or some managed Redis: set DisableCache, and AlwaysRESP2 for RESP2; in tests, fairrwtest does it)", err)
	}
	if err != nil && opt.TLSConfig != nil && timedOut(err) {
		return nil, "", fmt.Errorf("fairrw: connect to %s: %w (the TLS handshake got no answer: is the server serving TLS?)", addr, err)
	}
	if refusal := tlsRefusal(err, opt, ownDial); refusal != nil {
		return nil, "", fmt.Errorf("fairrw: connect to %s: %w (%s)", addr, refusal, tlsRefusalHint(refusal, opt.TLSConfig))
	}
	if tlsPort := plainToTLS(err, opt, ownDial); tlsPort != nil {
		// Not wrapping the reset: waiting would not cure it.
		return nil, "", fmt.Errorf("fairrw: connect to %s: %v", addr, tlsPort)
	}
	if err != nil {
		return nil, "", fmt.Errorf("fairrw: connect to %s: %w", addr, err)
	}
	p, err := resolvePublish(rdb, publish)
	if err != nil {
		rdb.Close()
		if refusedByACL(err) {
			return nil, "", tag(fmt.Sprintf("fairrw: connect to %s: %s", addr, reason(permissionError(err))), ErrPermission, err)
		}
		return nil, "", err
	}
	return rdb, p, nil
}

// use sets a rueidis client given with WithClient.
func (c *Client) use(rdb rueidis.Client, publish publishCommand) error {
	p, err := resolvePublish(rdb, publish)
	if err != nil {
		return err
	}
	c.install(rdb, p)
	return nil
}

// install sets the rueidis client rdb and what depends on it.
func (c *Client) install(rdb rueidis.Client, publish string) {
	rdb = c.installed(rdb)
	c.rdb, c.publish = rdb, publish
	c.cluster = rdb.Mode() == rueidis.ClientModeCluster
	c.janitor = newJanitor(rdb, c.halt)
}

// unavailable reports whether err says that Redis could not be reached
// (refused, reset, timed out, not resolved), which waiting may cure. A
// timeout under TLS is not: a server without TLS never answers the
// handshake.
func unavailable(err error, tls bool) bool {
	if tls && (timedOut(err) || tlsRefused(err)) {
		return false // no TLS on the port, or a TLS alert: the server answered
	}
	if _, ok := rueidis.IsRedisErr(err); ok || errors.Is(err, ErrPermission) {
		return false // Redis answered: a wrong password, say
	}
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || timedOut(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// await waits within ctx until the Client is connected (at once when New
// connected). name is the lock the call is for ("" for none).
func (c *Client) await(ctx context.Context, name string) error {
	conn := c.conn
	if conn == nil {
		return nil
	}
	select {
	case <-conn.ready:
		return nil
	default:
	}
	what := ""
	if name != "" {
		what = fmt.Sprintf(" for %q", name)
	}
	select {
	case <-conn.ready:
		return nil
	case <-c.closing:
		return ErrClosed
	case <-conn.failed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Errorf("fairrw: no connection to Redis%s: %w", what, conn.err)
	case <-ctx.Done():
		c.mu.Lock()
		last := conn.lastErr
		c.mu.Unlock()
		if last == nil {
			last = errors.New("no answer yet")
		}
		return tag(fmt.Sprintf("fairrw: Redis at %s unavailable%s: %v (%v)", conn.addr, what, last, ctx.Err()), ErrUnavailable, ctx.Err())
	}
}

// stopConnecting ends the background connection, if any, without waiting
// for a dial under way: a client it makes from now on is closed at once.
func (c *Client) stopConnecting() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.abandoned = true
		c.conn.stop()
	}
}

// Ping checks that Redis answers within ctx, for readiness probes. Otherwise
// it returns an error wrapping ErrUnavailable that names the address, or
// ErrPermission when Redis refused the Client's credentials or its PING.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	if err := c.await(ctx, ""); err != nil {
		return err
	}
	_, err := bounded(c, ctx, func(ctx context.Context) (string, error) {
		return c.rdb.Do(ctx, c.rdb.B().Ping().Build()).ToString()
	})
	if refusedByACL(err) {
		return tag(fmt.Sprintf("fairrw: ping %s: %s", c.address(), reason(permissionError(err))), ErrPermission, err)
	}
	if err != nil {
		return tag(fmt.Sprintf("fairrw: ping %s: Redis unavailable: %v", c.address(), err), ErrUnavailable, err)
	}
	return nil
}

// address names the Redis the Client uses: the addresses it was given, or
// the nodes of a rueidis client given with WithClient.
func (c *Client) address() (addr string) {
	if c.addr != "" {
		return c.addr
	}
	defer func() {
		if recover() != nil { // a stand-in client without Nodes
			addr = "Redis"
		}
	}()
	return strings.Join(slices.Sorted(maps.Keys(c.rdb.Nodes())), ",")
}
