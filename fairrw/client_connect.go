package fairrw

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/wait"
)

// Connection backoff while the Client cannot connect, and how long New
// waits for its first connection before it returns a Client that goes on
// connecting in the background (a frozen server holds a dial for the
// whole dial timeout): long enough for New to return what no retry cures
// (a wrong password, TLS against a plain server) on a Redis that answers.
const (
	minConnectBackoff = 50 * time.Millisecond
	maxConnectBackoff = 500 * time.Millisecond
	newWait           = time.Second
)

// connector is the state of a Client's first connection, made in the
// background.
type connector struct {
	addr  string        // the addresses it dials, for errors
	ready chan struct{} // closed once connected (c.rdb and the rest set)
	// failed is closed when connecting failed for good (err says why).
	failed chan struct{}
	stop   context.CancelFunc
	// Guarded by Client.mu.
	lastErr   error
	err       error // the error that failed it for good
	abandoned bool  // the Client closed: a client made now is closed at once
}

// connect makes the Client's rueidis client from opt, on a goroutine of its
// own; probe is opt as the caller gave it (its own dialer, if any, rather
// than the Client's reporting one), for the probes that tell a TLS
// mismatch. New waits for the first try up to newWait: a success or an
// error that waiting would not cure (errclass.go: a wrong password, TLS
// against a server without it, an ACL refusing what the Client needs) is
// New's answer; everything else is tried again in the background, with
// backoff, until it connects or the Client closes.
func (c *Client) connect(opt, probe rueidis.ClientOption, publish publishCommand) error {
	ctx, stop := context.WithCancel(context.Background())
	c.conn = &connector{addr: strings.Join(opt.InitAddress, ","),
		ready: make(chan struct{}), failed: make(chan struct{}), stop: stop}
	c.addr = c.conn.addr
	go c.redial(ctx, opt, probe, publish)
	t := time.NewTimer(min(newWait, c.conf.connectTimeout))
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
		c.mu.Lock()
		last := c.conn.lastErr
		c.mu.Unlock()
		if last == nil { // the first try is still under way (a frozen server, a loaded machine)
			last = fmt.Errorf("no connection within %v", min(newWait, c.conf.connectTimeout))
		}
		c.tel.log.Warn("fairrw: Redis unavailable at New; connecting in the background", "addr", c.conn.addr, "error", last)
		return nil
	}
}

// redial tries to connect until it succeeds, fails for good, or the Client
// closes. A failure that waiting may cure is reported to the Client's
// Redis health (one log line per outage, and one when it ends).
func (c *Client) redial(ctx context.Context, opt, probe rueidis.ClientOption, publish publishCommand) {
	conn := c.conn
	backoff := wait.NewBackoff(minConnectBackoff, maxConnectBackoff)
	failures := 0
	for first := true; ; first = false {
		if !first && backoff.Wait(ctx, nil) != nil {
			return
		}
		rdb, p, class, err := dial(opt, probe, publish)
		if refusesTracking(errors.Unwrap(err), opt) || refusesTracking(err, opt) {
			// The ACL user may not use client tracking (a tenant on a
			// shared Redis, docs/acl.md): connect without it, now and on
			// every later try.
			opt, probe = withoutTracking(opt), withoutTracking(probe)
			rdb, p, class, err = dial(opt, probe, publish)
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
			if failures > 0 {
				c.tel.log.Info("fairrw: connected to Redis", "addr", conn.addr, "failures", failures)
			}
			return
		case class != classRetry:
			conn.err = err
			close(conn.failed)
			c.mu.Unlock()
			c.tel.log.Error("fairrw: cannot connect to Redis", "addr", conn.addr, "error", err)
			return
		}
		conn.lastErr = err
		c.mu.Unlock()
		failures++
		c.tel.redisFailed(ctx, conn.addr, err)
	}
}

// untracked records, before the Client's first call may run, that its
// connection has no client tracking: no waiter arms it, no read shares a
// hold. It reports whether the Client meant to track. Call it with c.mu
// held, before the connection is announced ready.
func (c *Client) untracked() bool {
	was := c.tracking
	c.tracking, c.sharing = false, false
	return was
}

// dial makes a rueidis client and learns how to publish on it; failing,
// it says why and what waiting does about it (see explainConnect).
func dial(opt, probe rueidis.ClientOption, publish publishCommand) (rueidis.Client, string, errClass, error) {
	rdb, err := rueidis.NewClient(opt)
	if err == nil {
		p, perr := resolvePublish(rdb, publish)
		if perr == nil {
			return rdb, p, classRetry, nil
		}
		rdb.Close()
		err = perr
	}
	class, err := explainConnect(strings.Join(opt.InitAddress, ","), err, probe)
	return nil, "", class, err
}

// explainConnect turns err, a failure to connect to addr with the options
// probe, into the error calls see: it names the address, says why, wraps
// the sentinel of its class (errclass.go), and gives a hint where one
// helps. A reset TLS connection, a TLS handshake that got no answer, and a
// reset plain connection are probed first: the server may have refused the
// handshake, or speak Redis without TLS, or TLS without Redis's plain
// protocol (tls.go).
func explainConnect(addr string, err error, probe rueidis.ClientOption) (errClass, error) {
	prefix := "fairrw: connect to " + addr + ": "
	if refusedByACL(err) {
		// Before ErrNoCache: rueidis reports a refused CLIENT TRACKING as
		// a server without tracking. Waiting does not cure a refusal.
		return classRefused, tag(prefix+reason(permissionError(err)), ErrPermission, err)
	}
	if r, ok := replyOf(err); ok {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		switch r.class {
		case classRetry:
			return classRetry, tag(prefix+msg+" ("+r.why+"; retried)", ErrUnavailable, err)
		case classInvalid:
			return classInvalid, tag(prefix+msg+" ("+r.why+")", ErrInvalidOption, err)
		}
	}
	if errors.Is(err, rueidis.ErrNoCache) {
		// Said here because the first place users meet it is an
		// in-process test server, or a managed Redis.
		return classRefused, tag(prefix+err.Error()+" (a server without client tracking or RESP3, such as miniredis "+
			"or some managed Redis: set DisableCache, and AlwaysRESP2 for RESP2; in tests, fairrwtest does it)", ErrInvalidOption, err)
	}
	if probe.TLSConfig != nil && timedOut(err) {
		if plain := plainServer(probe); plain != "" {
			return classRefused, tag(prefix+err.Error()+" (the TLS handshake got no answer: the server at "+plain+" speaks Redis without TLS: "+
				"use a redis:// URL, or no TLSConfig; docs/acl.md, TLS)", ErrInvalidOption, err)
		}
		return classRetry, tag(prefix+err.Error()+" (the TLS handshake got no answer: a stalled endpoint or a frozen server; retried)", ErrUnavailable, err)
	}
	if refusal := tlsRefusal(err, probe); refusal != nil {
		return classRefused, tag(prefix+refusal.Error()+" ("+tlsRefusalHint(refusal, probe.TLSConfig)+")", ErrPermission, refusal)
	}
	if tlsPort := plainToTLS(err, probe); tlsPort != nil {
		// Not wrapping the reset: waiting would not cure it.
		return classRefused, tag(prefix+tlsPort.Error(), ErrInvalidOption)
	}
	class := classifyConnect(err)
	if class != classRetry {
		return class, fmt.Errorf("%s%w", prefix, err)
	}
	hint := ""
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		hint = " (the host is not known: a DNS name not there yet is retried)"
	}
	return classRetry, tag(prefix+err.Error()+hint, ErrUnavailable, err)
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

// await waits until the Client is connected (at once when New connected)
// within ctx, or, when ctx has no deadline, within the connect timeout:
// then it fails with ErrUnavailable, naming the address and the last
// error. name is the lock the call is for ("" for none).
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
	var bound <-chan time.Time // nil: ctx's deadline bounds the wait
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(c.conf.connectTimeout)
		defer t.Stop()
		bound = t.C
	}
	unavailable := func(cause error) error {
		c.mu.Lock()
		last := conn.lastErr
		c.mu.Unlock()
		why := "no answer yet"
		if last != nil {
			why = reason(last)
		} else {
			why = fmt.Sprintf("Redis at %s: %s", conn.addr, why)
		}
		if cause == nil {
			errs := []error{ErrUnavailable}
			if last != nil {
				errs = append(errs, last)
			}
			return tag(fmt.Sprintf("fairrw: Redis unavailable%s: no connection within the connect timeout %v: %s", what, c.conf.connectTimeout, why), errs...)
		}
		return tag(fmt.Sprintf("fairrw: Redis unavailable%s: %s (%v)", what, why, cause), ErrUnavailable, cause)
	}
	select {
	case <-conn.ready:
		return nil
	case <-c.closing:
		return ErrClosed
	case <-conn.failed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return tag(fmt.Sprintf("fairrw: no connection to Redis%s: %s", what, reason(conn.err)), conn.err)
	case <-ctx.Done():
		return unavailable(ctx.Err())
	case <-bound:
		return unavailable(nil)
	}
}

// whenConnected waits until the Client is connected (at once when New
// connected), and reports whether it is: false once ctx ends, the Client
// closes or connecting failed for good. Work of the Client's own that
// starts without a call awaiting the connection, and needs Redis, waits
// here before it reads c.redis(): a group's subscription loop, which a
// quorum's waiter starts on every node's Client, connected or not (nil
// until then: the loop panicked when a node was still connecting in the
// background).
func (c *Client) whenConnected(ctx context.Context) bool {
	conn := c.conn
	if conn == nil {
		return true
	}
	select {
	case <-conn.ready:
		return true
	case <-ctx.Done():
	case <-c.closing:
	case <-conn.failed:
	}
	return false
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

// Ping checks that Redis answers within ctx, for readiness probes: the
// Client's health, not one connection's. On a cluster every node is asked,
// and Ping fails while a node that serves slots does not answer (a shard
// down fails every Ping until it is back or failed over, rather than one
// in as many as there are nodes). Otherwise it returns an error wrapping
// ErrUnavailable that names the address, or ErrPermission when Redis
// refused the Client's credentials or its PING.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	if err := c.await(ctx, ""); err != nil {
		return err
	}
	if c.cluster {
		if nodes := clientNodes(c.rdb); len(nodes) > 1 {
			return c.pingCluster(ctx, nodes)
		}
	}
	return pingError(c.address(), c.pingNode(ctx, c.rdb))
}

// pingNode sends rdb a PING, bounded by ctx.
func (c *Client) pingNode(ctx context.Context, rdb rueidis.Client) error {
	_, err := bounded(c, ctx, func(ctx context.Context) (string, error) {
		return rdb.Do(ctx, rdb.B().Ping().Build().Pin()).ToString()
	})
	return err
}

// pingError is the error of Ping when addr answered err (nil: none).
func pingError(addr string, err error) error {
	switch {
	case err == nil:
		return nil
	case refusedByACL(err):
		return tag(fmt.Sprintf("fairrw: ping %s: %s", addr, reason(permissionError(err))), ErrPermission, err)
	case errors.Is(err, ErrUnavailable) && strings.Contains(err.Error(), "unavailable"):
		return tag(fmt.Sprintf("fairrw: ping %s: %s", addr, reason(err)), err)
	case errors.Is(err, ErrUnavailable):
		return tag(fmt.Sprintf("fairrw: ping %s: Redis unavailable: %s", addr, reason(err)), err)
	}
	return tag(fmt.Sprintf("fairrw: ping %s: Redis unavailable: %v", addr, err), ErrUnavailable, err)
}

// pingCluster pings every node of a cluster at once. It fails when a node
// that serves slots (in the view of a node that answers) does not answer,
// or when none answers; a replica that does not answer is no failure of
// the Client's.
func (c *Client) pingCluster(ctx context.Context, addrs []string) error {
	nodes := c.rdb.Nodes()
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		n := nodes[addr]
		if n == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.pingNode(ctx, n)
		}()
	}
	wg.Wait()
	var answered rueidis.Client
	var failed []int
	for i, err := range errs {
		switch {
		case err == nil && answered == nil:
			answered = nodes[addrs[i]]
		case err != nil:
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if answered != nil {
		if serving, ok := c.servingNodes(ctx, answered); ok {
			kept := failed[:0]
			for _, i := range failed {
				if serving[addrs[i]] {
					kept = append(kept, i)
				}
			}
			failed = kept
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return pingError(addrs[failed[0]], errs[failed[0]])
}

// servingNodes returns the addresses of the nodes that serve slots, as
// rdb, a node, sees them (CLUSTER SLOTS).
func (c *Client) servingNodes(ctx context.Context, rdb rueidis.Client) (map[string]bool, bool) {
	slots, err := bounded(c, ctx, func(ctx context.Context) ([]rueidis.RedisMessage, error) {
		return rdb.Do(ctx, rdb.B().ClusterSlots().Build().Pin()).ToArray()
	})
	if err != nil {
		return nil, false
	}
	ranges, ok := slotRanges(slots)
	if !ok {
		return nil, false
	}
	serving := make(map[string]bool)
	for _, rg := range ranges {
		if rg.primary == "" {
			return nil, false // an endpoint not given: nothing to tell by
		}
		serving[rg.primary] = true
	}
	return serving, true
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

// warnInsecureTLS logs a Client told not to verify the server's
// certificate (WithClientOption's TLSConfig.InsecureSkipVerify).
func (c *Client) warnInsecureTLS(opt rueidis.ClientOption) {
	if opt.TLSConfig != nil && opt.TLSConfig.InsecureSkipVerify {
		c.tel.log.Warn("fairrw: TLS certificate verification is off (InsecureSkipVerify): anyone on the network path can pose as Redis",
			"addr", strings.Join(opt.InitAddress, ","))
	}
}
