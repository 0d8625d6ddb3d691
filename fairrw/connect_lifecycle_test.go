package fairrw_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// A config error is not an outage: New fails at once with ErrInvalidOption
// and a hint, and dials nothing.
func TestConfigErrorsFailAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  fairrw.Option
		want string
	}{
		{"URL without a scheme", fairrw.WithURL("localhost:6379"), "redis://"},
		{"address URL without a scheme", fairrw.WithURL("127.0.0.1:6379"), "redis://"},
		{"port out of range", fairrw.WithURL("redis://localhost:99999"), "out of range"},
		{"port not a number", fairrw.WithURL("redis://localhost:abc"), "port"},
		{"DB index not a number", fairrw.WithURL("redis://localhost:6379/abc"), "database"},
		{"negative DB index", fairrw.WithURL("redis://localhost:6379/-1"), "DB index"},
		{"address without a port", fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"localhost"}}), "host:port"},
		{"port 0", fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"localhost:0"}}), "out of range"},
		{"connect timeout 0", fairrw.WithConnectTimeout(0), "connect timeout"},
		{"negative connect timeout", fairrw.WithConnectTimeout(-time.Second), "connect timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := []fairrw.Option{c.opt}
			if strings.Contains(c.name, "connect timeout") {
				opts = append(opts, fairrw.WithURL("redis://127.0.0.1:1"))
			}
			cl, err := fairrw.New(opts...)
			if err == nil {
				cl.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, fairrw.ErrInvalidOption) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New: %v, want ErrInvalidOption with %q in it", err, c.want)
			}
			// Refused before any dial: no outage in it.
			if errors.Is(err, fairrw.ErrUnavailable) {
				t.Errorf("New: %v reads as an outage", err)
			}
		})
	}
	// A port given by its service name is a port.
	var cfgErr error
	cl, cfgErr := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:1"}, DisableCache: true}), fairrw.WithConnectTimeout(50*time.Millisecond))
	if cfgErr != nil {
		t.Fatalf("New with a refused port: %v, want a Client that goes on connecting", cfgErr)
	}
	defer cl.Close()
}

// refusingProxy answers every command with reply (a RESP error line) while
// refusing, and forwards connections made after that to target.
type refusingProxy struct {
	proxyConns // mu also guards refusing
	target     string
	reply      string
	refusing   bool
}

// proxyConns is a test proxy's listener and the connections it made,
// closed together.
type proxyConns struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// close stops accepting, closes every connection made and waits for the
// proxy's goroutines.
func (p *proxyConns) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func startRefusingProxy(t *testing.T, target, reply string) *refusingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &refusingProxy{proxyConns: proxyConns{ln: ln}, target: target, reply: reply, refusing: true}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *refusingProxy) Addr() string { return p.ln.Addr().String() }

// serve makes every connection from now on reach the target, and closes
// those that were refused.
func (p *refusingProxy) serve() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = false
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *refusingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		if refusing {
			p.conns = append(p.conns, c)
		}
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if refusing {
				p.refuse(c)
				return
			}
			p.forward(c)
		}()
	}
}

// refuse answers each command of c (RESP arrays of bulk strings) with the
// proxy's reply.
func (p *refusingProxy) refuse(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		if err := skipCommand(r); err != nil {
			return
		}
		if _, err := io.WriteString(c, p.reply+"\r\n"); err != nil {
			return
		}
	}
}

func skipCommand(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "*") {
		return nil // an inline command: one line
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return err
	}
	for range n {
		head, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
		if err != nil {
			return err
		}
		if _, err := r.Discard(size + 2); err != nil {
			return err
		}
	}
	return nil
}

func (p *refusingProxy) forward(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(s, c)
		_ = s.Close()
		close(done)
	}()
	_, _ = io.Copy(c, s)
	_ = c.Close()
	<-done
}

// A Redis that answers LOADING, BUSY or MASTERDOWN to the connection's
// first commands is there, but cannot serve yet: New returns a Client
// (after its first connection's wait), a call meanwhile fails with
// ErrUnavailable by its deadline, naming the address and the reply, and
// once Redis serves the Client works, with no new Client needed. (The
// same against real servers: integration/connect_lifecycle_test.go.)
func TestClientMadeWhileRedisCannotServe(t *testing.T) {
	for _, reply := range []string{
		"-LOADING Redis is loading the dataset in memory",
		"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
		"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
	} {
		code, _, _ := strings.Cut(reply[1:], " ")
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			_, opt := redistest.Miniredis(t)
			p := startRefusingProxy(t, opt.InitAddress[0], reply)
			opt.InitAddress = []string{p.Addr()}
			opt.SelectDB = 1 // a command in the connection's handshake
			logs := &logRecorder{}
			c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithLogger(slog.New(logs)))
			if err != nil {
				t.Fatalf("New while Redis answers %s: %v, want a Client that goes on connecting", code, err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err = c.RWMutex("lifecycle").Lock(ctx)
			cancel()
			if !errors.Is(err, fairrw.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) ||
				!strings.Contains(err.Error(), code) || !strings.Contains(err.Error(), p.Addr()) {
				t.Fatalf("Lock while Redis answers %s: %v, want ErrUnavailable naming %s and the address", code, err, code)
			}
			if strings.Count(err.Error(), "fairrw:") != 1 {
				t.Errorf("the error repeats its prefix: %v", err)
			}
			p.serve()
			ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := c.RWMutex("lifecycle").Lock(ctx)
			if err != nil {
				t.Fatalf("Lock once Redis serves: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("Ping once Redis serves: %v", err)
			}
			// Said aloud, once: the outage when it began (however many
			// tries failed), and the connection when it came. The
			// connection's line is written once the calls waiting for it
			// were let go (a loaded machine ran them first): it is waited
			// for, 10 s at most, and must then be there once.
			var unreachable, connected int
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				unreachable, connected = 0, 0
				for _, r := range logs.records() {
					switch r.Message {
					case "fairrw: Redis unreachable":
						unreachable++
					case "fairrw: connected to Redis":
						connected++
					}
				}
				if connected > 0 || time.Now().After(deadline) {
					break
				}
			}
			if unreachable != 1 || connected != 1 {
				t.Errorf("logged the outage %d times and the connection %d times, want once each", unreachable, connected)
			}
		})
	}
}

// A call whose ctx has no deadline waits for a connection that the Client
// cannot make for the connect timeout, then fails with ErrUnavailable
// naming the address and the last error: it does not wait silently
// forever. Judged against a control measured here: a bare wait of a
// context of the same timeout; the call returns after the timeout, and
// its overrun is within ten times the control's and one more timeout.
func TestConnectTimeoutBoundsDeadlineLessCalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // refused from now on
	const timeout = 300 * time.Millisecond
	c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}), fairrw.WithConnectTimeout(timeout))
	if err != nil {
		t.Fatalf("New with Redis away: %v", err)
	}
	defer c.Close()
	calls := map[string]func(ctx context.Context) error{
		"Lock": func(ctx context.Context) error { _, err := c.RWMutex("away").Lock(ctx); return err },
		"Ping": c.Ping,
		"Inspect": func(ctx context.Context) error {
			_, err := c.Inspect(ctx, "away")
			return err
		},
		"ForceUnlock": func(ctx context.Context) error { return c.RWMutex("away").ForceUnlock(ctx, fairrw.Write) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	start := time.Now()
	<-ctx.Done()
	control := time.Since(start) - timeout
	cancel()
	for name, call := range calls {
		start := time.Now()
		err := call(context.Background())
		took := time.Since(start)
		if !errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s with Redis away: %v, want ErrUnavailable naming %s and the refusal", name, err, addr)
		}
		if strings.Count(err.Error(), "fairrw:") != 1 {
			t.Errorf("%s: the error repeats its prefix: %v", name, err)
		}
		if took < timeout || took-timeout > 10*control+timeout {
			t.Errorf("%s returned after %v, want the connect timeout %v (a bare wait overran it by %v)", name, took, timeout, control)
		}
	}
}

// Every call that fails for want of a connection, once the Client had
// connected, wraps ErrUnavailable, names the address, and says "fairrw:"
// once: Inspect and ForceUnlock as well as Lock and Ping (they returned a
// raw "dial tcp ... connection refused" during a failover).
func TestCallsWrapUnavailableAfterConnecting(t *testing.T) {
	mr, opt := redistest.Miniredis(t)
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := opt.InitAddress[0]
	mr.Close() // refused from now on
	calls := map[string]func(ctx context.Context) error{
		"Lock":        func(ctx context.Context) error { _, err := c.RWMutex("gone").Lock(ctx); return err },
		"TryLock":     func(ctx context.Context) error { _, err := c.RWMutex("gone").TryLock(ctx); return err },
		"Ping":        c.Ping,
		"Inspect":     func(ctx context.Context) error { _, err := c.Inspect(ctx, "gone"); return err },
		"ForceUnlock": func(ctx context.Context) error { return c.RWMutex("gone").ForceUnlock(ctx, fairrw.Write) },
		"Mutex.ForceUnlock": func(ctx context.Context) error {
			return c.Mutex("gone").ForceUnlock(ctx)
		},
	}
	// A call learns that Redis is gone from a refused dial, at once on an
	// idle machine; a loaded one may not run the dial before the call's
	// ctx ends. A try whose 300 ms the control saw held up for 100 ms or
	// more says nothing of the library, and is made again (3 tries).
	ctl := lateness.Start(t)
	for name, call := range calls {
		var err error
		for try := 1; ; try++ {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err = call(ctx)
			cancel()
			if errors.Is(err, fairrw.ErrUnavailable) || try == 3 || ctl.WorstStall(start, time.Now(), false) < 100*time.Millisecond {
				break
			}
			t.Logf("%s try %d: %v while the machine stalled %v: trying again", name, try, err, ctl.WorstStall(start, time.Now(), false))
		}
		if !errors.Is(err, fairrw.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s with Redis gone: %v, want ErrUnavailable naming %s", name, err, addr)
			continue
		}
		if strings.Count(err.Error(), "fairrw:") != 1 {
			t.Errorf("%s: the error repeats its prefix: %v", name, err)
		}
	}
}
