package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/fairrw/rwlock/internal/wire"
)

// callDeadline is the ctx timeout of the calls made while Redis cannot
// serve.
const callDeadline = 300 * time.Millisecond

// controlOverrun measures how late a bare wait for a ctx of callDeadline
// returns on this machine now: the yardstick of a call's overrun.
func controlOverrun() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	start := time.Now()
	<-ctx.Done()
	return time.Since(start) - callDeadline
}

// checkUnavailableByDeadline makes a Lock with a callDeadline ctx while
// Redis cannot serve: it must fail with ErrUnavailable (and the ctx's
// error) naming want, and return within the control's overrun (plus the
// 50 ms goal, and ten times the control for a loaded machine).
func checkUnavailableByDeadline(t *testing.T, c *fairrw.Client, name, want string) {
	t.Helper()
	control := controlOverrun()
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	start := time.Now()
	_, err := c.RWMutex(name).Lock(ctx)
	over := time.Since(start) - callDeadline
	t.Logf("Lock while Redis cannot serve: %v, %v past its deadline (control %v)", err, over.Round(time.Millisecond), control.Round(time.Millisecond))
	if !errors.Is(err, fairrw.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
		t.Errorf("Lock while Redis cannot serve: %v, want ErrUnavailable and the ctx's error, naming %q", err, want)
	}
	if err != nil && strings.Count(err.Error(), "fairrw:") != 1 {
		t.Errorf("the error repeats its prefix: %v", err)
	}
	if bound := 50*time.Millisecond + 10*max(control, time.Millisecond); over > bound {
		t.Errorf("Lock returned %v past its deadline, want at most %v (a bare wait: %v)", over, bound, control)
	}
}

// checkWorks takes and releases a lock on c, within 10 s: the Client
// works.
func checkWorks(t *testing.T, c *fairrw.Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	l, err := c.RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock once Redis serves: %v", err)
	}
	t.Logf("granted %v after Redis served", time.Since(start).Round(time.Millisecond))
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock once Redis serves: %v", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping once Redis serves: %v", err)
	}
}

// redisAt is a redis-server process of the test's own, started on port
// with dir as its directory, without waiting for it to serve.
type redisAt struct {
	cmd  *exec.Cmd
	done chan struct{}
	addr string
}

func startRedisAt(t *testing.T, dir string, port int, args ...string) *redisAt {
	t.Helper()
	bin := redistest.ServerBinary(t)
	logf, err := os.OpenFile(filepath.Join(dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &redisAt{cmd: cmd, done: make(chan struct{}), addr: "127.0.0.1:" + strconv.Itoa(port)}
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(r.kill)
	return r
}

func (r *redisAt) kill() {
	_ = r.cmd.Process.Kill()
	<-r.done
}

// waitReply polls addr with PING until its reply starts with prefix.
func waitReply(t *testing.T, addr, prefix string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	var err error
	for time.Now().Before(deadline) {
		last, err = redisnet.Command(addr, time.Second, "PING")
		if err == nil && strings.HasPrefix(last, prefix) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s did not answer PING with %q within %v: last %q, %v", addr, prefix, within, last, err)
}

// TestClientMadeWhileLoading: Redis restarted from an RDB, loading its
// data for seconds (-LOADING; key-load-delay slows the load, as a large
// RDB does). New returns a Client, a call meanwhile fails by its deadline
// with ErrUnavailable naming LOADING, and once Redis has loaded the Client
// works: with client tracking (the default) and without.
func TestClientMadeWhileLoading(t *testing.T) {
	dir := t.TempDir()
	port, err := redisnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	first := startRedisAt(t, dir, port, "--enable-debug-command", "yes")
	waitReply(t, first.addr, "+PONG", 10*time.Second)
	for _, cmd := range [][]string{{"DEBUG", "POPULATE", "20000"}, {"SAVE"}} {
		if reply, err := redisnet.Command(first.addr, 30*time.Second, cmd...); err != nil || !strings.HasPrefix(reply, "+OK") {
			t.Fatalf("%v: %q, %v", cmd, reply, err)
		}
	}
	first.kill() // the RDB is saved
	for _, tracking := range []bool{true, false} {
		t.Run("tracking="+strconv.FormatBool(tracking), func(t *testing.T) {
			r := startRedisAt(t, dir, port, "--key-load-delay", "100", "--loading-process-events-interval-bytes", "1024")
			waitReply(t, r.addr, "-LOADING", 10*time.Second)
			opt := rueidis.ClientOption{InitAddress: []string{r.addr}, DisableCache: !tracking}
			start := time.Now()
			c, err := fairrw.New(fairrw.WithClientOption(opt))
			if err != nil {
				t.Fatalf("New while Redis loads: %v (after %v), want a Client that connects once it has loaded", err, time.Since(start))
			}
			defer c.Close()
			checkUnavailableByDeadline(t, c, "lifecycle:loading", "LOADING")
			if reply, _ := redisnet.Command(r.addr, time.Second, "PING"); !strings.HasPrefix(reply, "-LOADING") {
				t.Fatalf("Redis no longer loading after the checks (%q): the load is too short to test", reply)
			}
			waitReply(t, r.addr, "+PONG", 60*time.Second)
			checkWorks(t, c, "lifecycle:loading")
			r.kill()
		})
	}
}

// TestClientMadeWhileBusy: Redis running a script past its
// busy-reply-threshold (-BUSY). New returns a Client, a call meanwhile
// fails by its deadline with ErrUnavailable naming BUSY (not a hint about
// client tracking), and once the script is killed the Client works.
func TestClientMadeWhileBusy(t *testing.T) {
	for _, tracking := range []bool{true, false} {
		t.Run("tracking="+strconv.FormatBool(tracking), func(t *testing.T) {
			r := redistest.StartProcess(t, "--busy-reply-threshold", "50")
			script := make(chan error, 1)
			go func() {
				_, err := redisnet.Command(r.Addr, time.Minute, "EVAL", "while true do end", "0")
				script <- err
			}()
			waitReply(t, r.Addr, "-BUSY", 10*time.Second)
			opt := r.ClientOption()
			opt.DisableCache = !tracking
			c, err := fairrw.New(fairrw.WithClientOption(opt))
			if err != nil {
				t.Fatalf("New while Redis is busy: %v, want a Client that connects once it is not", err)
			}
			defer c.Close()
			checkUnavailableByDeadline(t, c, "lifecycle:busy", "BUSY")
			if reply, err := redisnet.Command(r.Addr, 5*time.Second, "SCRIPT", "KILL"); err != nil || !strings.HasPrefix(reply, "+OK") {
				t.Fatalf("SCRIPT KILL: %q, %v", reply, err)
			}
			<-script
			waitReply(t, r.Addr, "+PONG", 10*time.Second)
			checkWorks(t, c, "lifecycle:busy")
		})
	}
}

// stallProxy accepts TCP connections and holds them, sending nothing,
// until released; then it forwards every connection, held or new, to
// target.
type stallProxy struct {
	ln       net.Listener
	target   string
	released chan struct{}
	once     sync.Once
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, released: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) Addr() string { return p.ln.Addr().String() }

func (p *stallProxy) release() { p.once.Do(func() { close(p.released) }) }

func (p *stallProxy) close() {
	_ = p.ln.Close()
	p.release()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *stallProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer c.Close()
			<-p.released
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				return
			}
			p.track(s)
			defer s.Close()
			go func() {
				_, _ = io.Copy(s, c)
				_ = s.Close()
			}()
			_, _ = io.Copy(c, s)
		}()
	}
}

// TestClientMadeWhileTLSHandshakeStalls: a TLS endpoint that accepts
// connections and answers nothing (a TLS proxy whose backend is starting)
// at New. A handshake that got no answer is retried, not taken for a
// server without TLS: a call meanwhile fails by its deadline with
// ErrUnavailable, and once the endpoint serves the Client works.
// (rediss:// to a plain server stays a permanent error: TestRedissToPlain.)
func TestClientMadeWhileTLSHandshakeStalls(t *testing.T) {
	ca := newTestCA(t, "fairrw stall CA")
	target := startTLSRedis(t, ca)
	p := startStallProxy(t, target)
	opt := rueidis.ClientOption{InitAddress: []string{p.Addr()}, DisableCache: true,
		TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	opt.Dialer.Timeout = 200 * time.Millisecond
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err != nil {
		t.Fatalf("New while the TLS handshake stalls: %v, want a Client that connects once it does not", err)
	}
	defer c.Close()
	checkUnavailableByDeadline(t, c, "lifecycle:tls", p.Addr())
	p.release()
	checkWorks(t, c, "lifecycle:tls")
}

// TestClientMadeWhileHostUnknown: a host name not (yet) in DNS is retried,
// not a config error: New returns a Client, and a call fails with
// ErrUnavailable naming the host.
func TestClientMadeWhileHostUnknown(t *testing.T) {
	c, err := fairrw.New(fairrw.WithURL("redis://fairrw-no-such-host.invalid:6379"), fairrw.WithConnectTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatalf("New with an unknown host: %v, want a Client that goes on trying", err)
	}
	defer c.Close()
	err = c.Ping(context.Background())
	if !errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), "fairrw-no-such-host.invalid") {
		t.Fatalf("Ping with an unknown host: %v, want ErrUnavailable naming the host", err)
	}
}

// TestWaitersThroughBusy: Redis goes BUSY (a long script) while Locks
// wait on a held lock: one gives up meanwhile (its unsubscribe meets
// BUSY), another starts waiting; once the script is killed the release
// wakes the one still waiting, and nothing panics.
func TestWaitersThroughBusy(t *testing.T) {
	r := redistest.StartProcess(t, "--busy-reply-threshold", "50")
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			a := itest.NewClientOn(t, r.ClientOption(), tr)
			b := itest.NewClientOn(t, r.ClientOption(), tr)
			name := "lifecycle:busy-waiters:" + tr.Name
			ctx := itest.TestCtx(t)
			held, err := a.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			leaving := make(chan error, 1)
			go func() {
				lctx, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
				defer cancel()
				_, err := b.RWMutex(name).Lock(lctx)
				leaving <- err
			}()
			time.Sleep(200 * time.Millisecond) // it waits, subscribed
			script := make(chan error, 1)
			go func() {
				_, err := redisnet.Command(r.Addr, time.Minute, "EVAL", "while true do end", "0")
				script <- err
			}()
			waitReply(t, r.Addr, "-BUSY", 10*time.Second)
			staying := make(chan error, 1)
			go func() {
				l, err := b.RWMutex(name).Lock(ctx)
				if err == nil {
					err = l.Unlock(ctx)
				}
				staying <- err
			}()
			if err := <-leaving; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the Lock whose ctx ended during BUSY: %v, want its ctx's error", err)
			}
			time.Sleep(200 * time.Millisecond)
			if reply, err := redisnet.Command(r.Addr, 5*time.Second, "SCRIPT", "KILL"); err != nil || !strings.HasPrefix(reply, "+OK") {
				t.Fatalf("SCRIPT KILL: %q, %v", reply, err)
			}
			<-script
			if err := held.Unlock(ctx); err != nil {
				t.Fatalf("Unlock after BUSY: %v", err)
			}
			select {
			case err := <-staying:
				if err != nil {
					t.Fatalf("the Lock that waited through BUSY: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the Lock that waited through BUSY was not granted within 10 s of the release")
			}
		})
	}
}

// TestWaitersLeaveBetweenBusyScripts: Redis runs 120 ms scripts back to
// back, past its busy-reply-threshold, so that it is BUSY but for a moment
// between two; meanwhile Locks wait on held locks and give up, their groups
// ending all the time, some in such a moment. rueidis v1.0.79 panics (or
// misplaces answers) when an UNSUBSCRIBE meets BUSY, and no check before
// it can tell that the next script has not started: a subscription must
// end without one. After the scripts, a waiter is granted on release,
// every subscription ends, and nothing panicked (which would end the test
// binary).
func TestWaitersLeaveBetweenBusyScripts(t *testing.T) {
	r := redistest.StartProcess(t, "--busy-reply-threshold", "50")
	const spin = `local t = redis.call('TIME') local s = t[1] * 1000000 + t[2]
repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - s > 120000`
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			a := itest.NewClientOn(t, r.ClientOption(), tr)
			b := itest.NewClientOn(t, r.ClientOption(), tr)
			raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			ctx := itest.TestCtx(t)
			const names = 4
			name := func(i int) string { return "lifecycle:busy-churn:" + tr.Name + ":" + strconv.Itoa(i) }
			var held []*fairrw.Lease
			for i := range names {
				l, err := a.RWMutex(name(i)).Lock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, l)
			}
			stop := make(chan struct{})
			var scripts, busyAnswers int
			runner := make(chan error, 1)
			go func() {
				for {
					select {
					case <-stop:
						runner <- nil
						return
					default:
					}
					err := raw.Do(ctx, raw.B().Eval().Script(spin).Numkeys(0).Build()).Error()
					if err != nil && !rueidis.IsRedisNil(err) {
						runner <- err
						return
					}
					scripts++
				}
			}()
			waitReply(t, r.Addr, "-BUSY", 10*time.Second)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var leaves int
			for i := range 2 * names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; ; j++ {
						select {
						case <-stop:
							return
						default:
						}
						lctx, cancel := context.WithTimeout(ctx, time.Duration(20+(i*7+j*13)%80)*time.Millisecond)
						l, err := b.RWMutex(name(i % names)).Lock(lctx)
						cancel()
						mu.Lock()
						switch {
						case err == nil:
							t.Errorf("%s granted to b while a holds it", name(i%names))
							_ = l.Unlock(ctx)
						case errors.Is(err, fairrw.ErrUnavailable):
							busyAnswers++
							leaves++
						case errors.Is(err, context.DeadlineExceeded):
							leaves++
						default:
							t.Errorf("a waiter giving up: %v, want its ctx's error or ErrUnavailable", err)
						}
						mu.Unlock()
					}
				}()
			}
			time.Sleep(3 * time.Second)
			close(stop)
			wg.Wait()
			if err := <-runner; err != nil {
				t.Fatalf("the busy scripts: %v", err)
			}
			t.Logf("%d scripts; %d waits given up (%d on BUSY)", scripts, leaves, busyAnswers)
			if leaves == 0 {
				t.Fatal("no waiter gave up while Redis ran the scripts")
			}
			granted := make(chan error, 1)
			go func() {
				l, err := b.RWMutex(name(0)).Lock(ctx)
				if err == nil {
					err = l.Unlock(ctx)
				}
				granted <- err
			}()
			waitNumsub(t, raw, wire.Fair(name(0)).Channel, func(n int64) bool { return n >= 1 })
			for _, l := range held {
				itest.MustUnlock(t, l)
			}
			select {
			case err := <-granted:
				if err != nil {
					t.Fatalf("the Lock waiting once the scripts ended: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the Lock waiting once the scripts ended was not granted within 10 s of the release")
			}
			for i := range names {
				waitNumsub(t, raw, wire.Fair(name(i)).Channel, func(n int64) bool { return n == 0 })
			}
		})
	}
}

// waitNumsub waits up to 10 s until the count of channel's subscribers
// satisfies ok.
func waitNumsub(t *testing.T, raw rueidis.Client, channel string, ok func(int64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var n int64
	for {
		counts, err := raw.Do(itest.TestCtx(t), raw.B().PubsubNumsub().Channel(channel).Build()).ToArray()
		if err != nil || len(counts) != 2 {
			t.Fatalf("PUBSUB NUMSUB %s: %v %v", channel, counts, err)
		}
		if n, _ = counts[1].AsInt64(); ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d subscribers after 10 s", channel, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectTimeoutAfterConnecting: a Client that had connected, then
// Redis stopped (refused) or frozen (unanswered). A Lock whose ctx has no
// deadline fails with ErrUnavailable after the connect timeout, rather than
// wait silently for ever; judged against a bare wait of the same timeout.
func TestConnectTimeoutAfterConnecting(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, fault := range []string{"stopped", "frozen"} {
		t.Run(fault, func(t *testing.T) {
			r := redistest.StartProcess(t)
			c := itest.NewClientOn(t, r.ClientOption(), itest.Transports[1], fairrw.WithConnectTimeout(timeout))
			if err := c.Ping(itest.TestCtx(t)); err != nil {
				t.Fatal(err)
			}
			if fault == "stopped" {
				r.Stop(t)
			} else {
				r.Pause(t)
				defer r.Resume(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			start := time.Now()
			<-ctx.Done()
			control := time.Since(start) - timeout
			cancel()
			start = time.Now()
			_, err := c.RWMutex("lifecycle:after").Lock(context.Background())
			took := time.Since(start)
			t.Logf("Lock with Redis %s: %v after %v (control overrun %v)", fault, err, took.Round(time.Millisecond), control)
			if !errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), r.Addr) {
				t.Errorf("Lock with Redis %s: %v, want ErrUnavailable naming %s", fault, err, r.Addr)
			}
			if took < timeout || took-timeout > 10*control+timeout {
				t.Errorf("Lock returned after %v, want the connect timeout %v (a bare wait overran it by %v)", took, timeout, control)
			}
		})
	}
}

// TestConfigRefusedByRedis: what Redis shows wrong at connecting is no
// outage, and New says so at once: a DB index it does not have, and
// rediss:// to a plain server (the handshake unanswered, a plain PING
// answered) wrap ErrInvalidOption, not ErrUnavailable.
func TestConfigRefusedByRedis(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, c := range []struct {
		name, url, want string
	}{
		{"DB index out of range", "redis://" + r.Addr + "/99", "DB index"},
		{"rediss:// to a plain server", "rediss://" + r.Addr + "?dial_timeout=300ms", "without TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := fairrw.New(fairrw.WithURL(c.url))
			if err == nil {
				cl.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, fairrw.ErrInvalidOption) || errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want ErrInvalidOption saying %q", err, c.want)
			}
		})
	}
}
