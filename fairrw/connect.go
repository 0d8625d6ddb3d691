package fairrw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// ErrUnavailable is returned (wrapped, with the ctx's error and the last
// connection error, naming the address) by a call that waited within its
// ctx for a Client's first connection to Redis and did not get it: New
// returns a usable Client while Redis is momentarily away (a pod that
// starts before Redis), and connects in the background.
var ErrUnavailable = errors.New("fairrw: Redis unavailable")

// Connection backoff while Redis is away at New.
const (
	minConnectBackoff = 50 * time.Millisecond
	maxConnectBackoff = 2 * time.Second
)

// connector is the state of a Client's first connection, when New could
// not make it.
type connector struct {
	addr    string        // the addresses it dials, for errors
	ready   chan struct{} // closed once connected (c.rdb and the rest set)
	stop    context.CancelFunc
	stopped chan struct{} // closed when the connecting goroutine ended
	lastErr error         // guarded by Client.mu
}

// connect makes the Client's rueidis client from opt: at once, or, when
// Redis cannot be reached now, in the background (see ErrUnavailable). An
// error that waiting would not cure (an option rueidis refuses, a server
// without client tracking) fails at once.
func (c *Client) connect(opt rueidis.ClientOption, publish PublishCommand) error {
	err := c.dial(opt, publish)
	if err == nil || !unavailable(err) {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	c.conn = &connector{addr: strings.Join(opt.InitAddress, ","), ready: make(chan struct{}), stop: stop, stopped: make(chan struct{}), lastErr: err}
	c.tel.log.Warn("fairrw: Redis unavailable at New; connecting in the background", "addr", c.conn.addr, "error", err)
	go c.redial(ctx, opt, publish)
	return nil
}

// redial retries dial until it succeeds, fails for good, or the Client
// closes.
func (c *Client) redial(ctx context.Context, opt rueidis.ClientOption, publish PublishCommand) {
	defer close(c.conn.stopped)
	backoff := minConnectBackoff
	for {
		if sleepCtx(ctx, nil, backoff) != nil {
			return
		}
		err := c.dial(opt, publish)
		if err == nil {
			c.tel.log.Info("fairrw: connected to Redis", "addr", c.conn.addr)
			close(c.conn.ready)
			return
		}
		c.mu.Lock()
		c.conn.lastErr = err
		c.mu.Unlock()
		backoff = min(backoff*2, maxConnectBackoff)
	}
}

// dial makes the rueidis client and what depends on it.
func (c *Client) dial(opt rueidis.ClientOption, publish PublishCommand) error {
	rdb, err := rueidis.NewClient(opt)
	if errors.Is(err, rueidis.ErrNoCache) {
		// Said here because the first place users meet it is an
		// in-process test server, or a managed Redis.
		return fmt.Errorf("fairrw: connect: %w (a server without client tracking or RESP3, such as miniredis "+
			"or some managed Redis: set DisableCache, and AlwaysRESP2 for RESP2; in tests, fairrwtest does it)", err)
	}
	if err != nil {
		return fmt.Errorf("fairrw: connect to %s: %w", strings.Join(opt.InitAddress, ","), err)
	}
	if err := c.use(rdb, publish); err != nil {
		rdb.Close()
		return err
	}
	c.ownsRedis = true
	return nil
}

// use sets the rueidis client rdb and what depends on it.
func (c *Client) use(rdb rueidis.Client, publish PublishCommand) error {
	p, err := resolvePublish(rdb, publish)
	if err != nil {
		return err
	}
	c.rdb, c.publish = rdb, p
	c.cluster = rdb.Mode() == rueidis.ClientModeCluster
	c.janitor = newJanitor(rdb, c.halt)
	return nil
}

// unavailable reports whether err says that Redis could not be reached
// (refused, reset, timed out, not resolved), which waiting may cure.
func unavailable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// await waits within ctx until the Client is connected (at once when New
// connected). name is the lock the call is for ("" for none).
func (c *Client) await(ctx context.Context, name string) error {
	if c.conn == nil {
		return nil
	}
	select {
	case <-c.conn.ready:
		return nil
	default:
	}
	select {
	case <-c.conn.ready:
		return nil
	case <-c.closing:
		return ErrClosed
	case <-ctx.Done():
		c.mu.Lock()
		last := c.conn.lastErr
		c.mu.Unlock()
		what := ""
		if name != "" {
			what = fmt.Sprintf(" for %q", name)
		}
		return tag(fmt.Sprintf("fairrw: Redis at %s unavailable%s: %v (%v)", c.conn.addr, what, last, ctx.Err()), ErrUnavailable, ctx.Err())
	}
}

// connected reports whether the Client has its rueidis client.
func (c *Client) connected() bool {
	if c.conn == nil {
		return true
	}
	select {
	case <-c.conn.ready:
		return true
	default:
		return false
	}
}

// stopConnecting ends the background connection, if any, and waits for it.
func (c *Client) stopConnecting() {
	if c.conn != nil {
		c.conn.stop()
		<-c.conn.stopped
	}
}

// Ping checks that Redis answers, within ctx: for readiness probes. It
// returns an error wrapping ErrUnavailable (and the ctx's error, or the
// connection's) naming the address when it does not.
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
	if err != nil {
		return tag(fmt.Sprintf("fairrw: ping: Redis unavailable: %v", err), ErrUnavailable, err)
	}
	return nil
}
