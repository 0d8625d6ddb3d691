package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

const (
	// silence is how long a test waits to see that nothing answers.
	silence = 150 * time.Millisecond
	// bound is the most any expected answer may take.
	bound = 5 * time.Second
)

// key is a key of its own for the test (FAIRRW_REDIS_ADDR may share one
// Redis between tests and runs).
func key(t *testing.T) string {
	return t.Name() + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// clientVia is a rueidis client of r that connects through addr. It does not
// retry, uses one connection (no pipeline opened later, whose handshake
// could be the command a fault hits) and sends no background PING (idem).
func clientVia(t *testing.T, r *redistest.Redis, addr string) rueidis.Client {
	return r.Client(t, func(o *rueidis.ClientOption) {
		o.InitAddress = []string{addr}
		o.DisableCache = true
		o.DisableRetry = true
		o.PipelineMultiplex = -1
		o.Dialer.KeepAlive = -1
	})
}

// direct is a rueidis client straight to r, to see what Redis really did.
func direct(t *testing.T, r *redistest.Redis) rueidis.Client {
	return r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
}

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ping(c rueidis.Client, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Do(ctx, c.B().Ping().Build()).Error()
}

func mustPing(t *testing.T, c rueidis.Client) {
	t.Helper()
	if err := ping(c, bound); err != nil {
		t.Fatalf("PING: %v", err)
	}
}

// get returns the value of k in Redis, "" when it does not exist.
func get(t *testing.T, c rueidis.Client, k string) string {
	t.Helper()
	v, err := c.Do(within(t, bound), c.B().Get().Key(k).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s: %v", k, err)
	}
	return v
}

func incr(c rueidis.Client, k string, d time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Do(ctx, c.B().Incr().Key(k).Build()).AsInt64()
}

// eventually retries f (which must bound itself) until it succeeds, for at
// most bound.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, bound, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// raw is a plain RESP connection, to see exactly what crosses the proxy.
type raw struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *raw) send(args ...string) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.c.SetWriteDeadline(time.Now().Add(bound))
	if _, err := r.c.Write([]byte(b.String())); err != nil {
		r.t.Fatalf("write %q: %v", args, err)
	}
}

// line reads one reply line, waiting at most d.
func (r *raw) line(d time.Duration) (string, error) {
	r.c.SetReadDeadline(time.Now().Add(d))
	s, err := r.br.ReadString('\n')
	return strings.TrimRight(s, "\r\n"), err
}

func (r *raw) expect(want string) {
	r.t.Helper()
	if got, err := r.line(bound); err != nil || got != want {
		r.t.Fatalf("reply %q, %v; want %q", got, err, want)
	}
}

// silent checks that nothing arrives for a while.
func (r *raw) silent() {
	r.t.Helper()
	if got, err := r.line(silence); !os.IsTimeout(err) {
		r.t.Fatalf("got %q, %v; want no answer", got, err)
	}
}

// reset checks that the connection was reset by the proxy.
func (r *raw) reset() {
	r.t.Helper()
	if got, err := r.line(bound); !errors.Is(err, syscall.ECONNRESET) {
		r.t.Fatalf("got %q, %v; want a connection reset", got, err)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	if err := redisnet.PingWithin(p.Addr(), bound); err != nil {
		t.Fatal(err)
	}
	mustPing(t, clientVia(t, r, p.Addr()))
	if conns, dropped := p.Stats(); conns < 2 || dropped != 0 {
		t.Fatalf("Stats = %d conns, %d dropped; want >= 2, 0", conns, dropped)
	}
}

func TestStall(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, c, k := direct(t, r), clientVia(t, r, p.Addr()), key(t)
	mustPing(t, c)

	p.Stall()
	if _, err := incr(c, k, silence); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("INCR while stalled: %v, want a timeout", err)
	}
	if v := get(t, d, k); v != "" {
		t.Fatalf("INCR reached Redis while stalled: %s = %q", k, v)
	}

	p.Heal()
	eventually(t, "stalled INCR delivered", func() error {
		if v := get(t, d, k); v != "1" {
			return fmt.Errorf("%s = %q", k, v)
		}
		return nil
	})
	// The client works again (rueidis may have closed the connection its
	// command timed out on and reconnect), and the stalled INCR ran exactly
	// once.
	if n, err := incr(c, k, bound); err != nil || n != 2 {
		t.Fatalf("INCR after Heal = %d, %v; want 2", n, err)
	}
}

// TestStallBothWaysInOrder holds a reply Redis sends and commands a client
// sends, and delivers both in order after Heal.
func TestStallBothWaysInOrder(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, k, list := direct(t, r), key(t), key(t)+":list"

	waiter := dialRaw(t, p.Addr())
	waiter.send("PING")
	waiter.expect("+PONG")
	waiter.send("BLPOP", list, "0")
	counter := dialRaw(t, p.Addr())
	counter.send("PING")
	counter.expect("+PONG")
	// Let the BLPOP block in Redis before the stall holds it back.
	eventually(t, "BLPOP blocked", func() error {
		info, err := d.Do(within(t, bound), d.B().Info().Section("clients").Build()).ToString()
		if err != nil || !strings.Contains(info, "blocked_clients:1") {
			return fmt.Errorf("INFO clients: %v", err)
		}
		return nil
	})

	p.Stall()
	// Redis answers the BLPOP, the proxy holds the answer.
	if err := d.Do(within(t, bound), d.B().Rpush().Key(list).Element("x").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		counter.send("INCR", k)
	}
	waiter.silent()
	counter.silent()
	if v := get(t, d, k); v != "" {
		t.Fatalf("INCR reached Redis while stalled: %s = %q", k, v)
	}

	p.Heal()
	waiter.expect("*2")
	for i := 1; i <= 3; i++ {
		counter.expect(":" + strconv.Itoa(i))
	}
}

func TestBlackhole(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, c, k := direct(t, r), clientVia(t, r, p.Addr()), key(t)
	mustPing(t, c)
	idle, busy := dialRaw(t, p.Addr()), dialRaw(t, p.Addr())
	for _, rc := range []*raw{idle, busy} {
		rc.send("PING")
		rc.expect("+PONG")
	}

	p.Blackhole()
	if _, err := incr(c, k, silence); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("INCR while blackholed: %v, want a timeout", err)
	}
	busy.send("INCR", k)
	busy.silent()

	p.Heal()
	// A connection that lost bytes is reset; one that lost nothing goes on.
	busy.reset()
	idle.send("PING")
	idle.expect("+PONG")
	// New connections work, and rueidis reconnects by itself.
	if err := redisnet.PingWithin(p.Addr(), bound); err != nil {
		t.Fatalf("new connection after Heal: %v", err)
	}
	eventually(t, "rueidis after Heal", func() error { return ping(c, time.Second) })
	// The lost commands never ran.
	if v := get(t, d, k); v != "" {
		t.Fatalf("a blackholed INCR ran: %s = %q", k, v)
	}
}

// TestStallThenBlackhole discards what Stall held when Blackhole follows.
func TestStallThenBlackhole(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, k := direct(t, r), key(t)
	rc := dialRaw(t, p.Addr())
	p.Stall()
	rc.send("INCR", k)
	rc.silent()
	p.Blackhole()
	p.Heal()
	rc.reset()
	if v := get(t, d, k); v != "" {
		t.Fatalf("the held INCR ran: %s = %q", k, v)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	c := clientVia(t, r, p.Addr())
	mustPing(t, c)
	rc := dialRaw(t, p.Addr())
	rc.send("PING")
	rc.expect("+PONG")
	before, _ := p.Stats()

	p.Reset()
	rc.reset()
	// The next command may fail; rueidis then reconnects through the proxy.
	eventually(t, "rueidis after Reset", func() error { return ping(c, time.Second) })
	if after, _ := p.Stats(); after <= before {
		t.Fatalf("%d connections after Reset, %d before: want a new one", after, before)
	}
}

func TestDropNextReply(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, k := direct(t, r), key(t)

	// Raw RESP: nothing else on the wire.
	p.DropNextReply()
	_, err := redisnet.Command(p.Addr(), bound, "INCR", k)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("INCR with its reply dropped: %v, want a connection reset", err)
	}
	if v := get(t, d, k); v != "1" {
		t.Fatalf("the command ran, the reply was lost: %s = %q, want 1", k, v)
	}
	if _, dropped := p.Stats(); dropped != 1 {
		t.Fatalf("%d replies dropped, want 1", dropped)
	}
	// One call drops one reply.
	if reply, err := redisnet.Command(p.Addr(), bound, "INCR", k); err != nil || reply != ":2" {
		t.Fatalf("next INCR = %q, %v; want :2", reply, err)
	}

	// rueidis: an error, not a timeout, and it reconnects.
	c := clientVia(t, r, p.Addr())
	mustPing(t, c)
	p.DropNextReply()
	if _, err := incr(c, k, bound); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("rueidis INCR with its reply dropped: %v, want a connection error", err)
	} else {
		t.Logf("rueidis INCR with its reply dropped: %v", err)
	}
	if v := get(t, d, k); v != "3" {
		t.Fatalf("%s = %q, want 3", k, v)
	}
	eventually(t, "rueidis after a dropped reply", func() error { return ping(c, time.Second) })
	if n, err := incr(c, k, bound); err != nil || n != 4 {
		t.Fatalf("INCR = %d, %v; want 4", n, err)
	}
	if _, dropped := p.Stats(); dropped != 2 {
		t.Fatalf("%d replies dropped, want 2", dropped)
	}
}

func TestDropReplyMatching(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, c, k := direct(t, r), clientVia(t, r, p.Addr()), key(t)
	sha, err := c.Do(within(t, bound), c.B().ScriptLoad().Script("return redis.call('INCR', KEYS[1])").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	evalsha := func() (int64, error) {
		return c.Do(within(t, bound), c.B().Evalsha().Sha1(sha).Numkeys(1).Key(k).Build()).AsInt64()
	}

	p.DropReplyMatching("EVALSHA")
	mustPing(t, c) // does not match: answered
	if n, err := incr(c, k, bound); err != nil || n != 1 {
		t.Fatalf("INCR = %d, %v; want 1", n, err)
	}
	if _, err := evalsha(); err == nil {
		t.Fatal("EVALSHA answered, want its reply dropped")
	}
	if v := get(t, d, k); v != "2" {
		t.Fatalf("the script ran, the reply was lost: %s = %q, want 2", k, v)
	}
	if _, dropped := p.Stats(); dropped != 1 {
		t.Fatalf("%d replies dropped, want 1", dropped)
	}
	eventually(t, "rueidis after a dropped reply", func() error { return ping(c, time.Second) })
	if n, err := evalsha(); err != nil || n != 3 {
		t.Fatalf("second EVALSHA = %d, %v; want 3 (one drop per call)", n, err)
	}
}

// TestDropMatchAcrossChunks matches a command split between two reads.
func TestDropMatchAcrossChunks(t *testing.T) {
	p := &Proxy{drops: []string{"EVALSHA", "NEVER"}}
	c := &conn{p: p}
	c.claimDropLocked([]byte("*3\r\n$7\r\nEVA"))
	if c.dropReply {
		t.Fatal("armed on half a match")
	}
	c.claimDropLocked([]byte("LSHA\r\n$40\r\n"))
	if !c.dropReply || len(p.drops) != 1 || p.drops[0] != "NEVER" {
		t.Fatalf("dropReply %v, drops %q; want armed by EVALSHA", c.dropReply, p.drops)
	}
}

func TestRefuse(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	c := clientVia(t, r, p.Addr())
	mustPing(t, c)
	before, _ := p.Stats()

	p.Refuse(true)
	if err := redisnet.PingWithin(p.Addr(), bound); err == nil || os.IsTimeout(err) {
		t.Fatalf("new connection while refusing: %v, want it closed at once", err)
	}
	mustPing(t, c) // existing connections work
	if after, _ := p.Stats(); after != before {
		t.Fatalf("%d connections, %d before: refused ones must not count", after, before)
	}

	p.Refuse(false)
	if err := redisnet.PingWithin(p.Addr(), bound); err != nil {
		t.Fatalf("new connection after Refuse(false): %v", err)
	}
}

// TestTargetDown resets clients when the proxy cannot reach Redis.
func TestTargetDown(t *testing.T) {
	t.Parallel()
	port, err := redisnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := StartProxy(t, "127.0.0.1:"+strconv.Itoa(port))
	if err := redisnet.PingWithin(p.Addr(), bound); err == nil || os.IsTimeout(err) {
		t.Fatalf("PING through a proxy to nothing: %v, want a reset", err)
	}
}

// TestClose closes a proxy with idle, stalled and blackholed connections and
// checks that its goroutines are gone. Not parallel: goleak looks at every
// goroutine.
func TestClose(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs after the cleanups below (redis-server).
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	r := redistest.Start(t)
	p, err := NewProxy(r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	idle, stalled, holed := dialRaw(t, p.Addr()), dialRaw(t, p.Addr()), dialRaw(t, p.Addr())
	for _, rc := range []*raw{idle, stalled, holed} {
		rc.send("PING")
		rc.expect("+PONG")
	}
	p.Stall()
	stalled.send("PING")
	stalled.silent()
	p.Blackhole()
	holed.send("PING")
	holed.silent()
	p.Stall()

	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Close did not return within %v", bound)
	}
	for _, rc := range []*raw{idle, stalled, holed} {
		rc.reset()
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := redisnet.PingWithin(p.Addr(), time.Second); err == nil {
		t.Fatal("PING through a closed proxy answered")
	}
}

// TestDelayMatching: the delayed command fails for the client at once, runs
// in Redis only after the delay, and a retry on a new connection runs at
// once: two copies, in the order a late network copy would give.
func TestDelayMatching(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	p := StartProxy(t, r.Addr)
	d, c, k := direct(t, r), clientVia(t, r, p.Addr()), key(t)
	const delay = 600 * time.Millisecond
	p.DelayMatching("INCR", delay)
	mustPing(t, c) // does not match: answered
	start := time.Now()
	if _, err := incr(c, k, bound); err == nil {
		t.Fatal("the delayed INCR was answered, want a broken connection")
	}
	if v := get(t, d, k); v != "" {
		t.Fatalf("%s = %q right after, want the INCR held back", k, v)
	}
	eventually(t, "rueidis after a reset", func() error { return ping(c, time.Second) })
	if n, err := incr(c, k, bound); err != nil || n != 1 {
		t.Fatalf("retried INCR = %d, %v; want 1 (the held copy has not run yet)", n, err)
	}
	eventually(t, "the held copy", func() error {
		if v := get(t, d, k); v != "2" {
			return fmt.Errorf("%s = %q", k, v)
		}
		return nil
	})
	if since := time.Since(start); since < delay {
		t.Fatalf("the held copy ran after %v, before its delay of %v", since, delay)
	}
}
