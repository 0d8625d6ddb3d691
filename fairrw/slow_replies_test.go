package fairrw_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// slowReplyProxy forwards TCP connections to target, holding every byte
// the server sends back for delay (requests go through at once): a
// Client behind it sees each round trip take delay longer, while its
// commands reach Redis on time.
type slowReplyProxy struct {
	proxyConns
	target string
	delay  atomic.Int64 // nanoseconds
}

func startSlowReplyProxy(t *testing.T, target string) *slowReplyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowReplyProxy{proxyConns: proxyConns{ln: ln}, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *slowReplyProxy) addr() string { return p.ln.Addr().String() }

func (p *slowReplyProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *slowReplyProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Add(3)
		go func() { // requests: at once
			defer p.wg.Done()
			_, _ = io.Copy(server, client)
			_ = server.Close()
		}()
		type chunk struct {
			at time.Time
			b  []byte
		}
		chunks := make(chan chunk, 1024)
		go func() { // replies: read at once, written delay later
			defer p.wg.Done()
			defer close(chunks)
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 {
					chunks <- chunk{time.Now().Add(time.Duration(p.delay.Load())), append([]byte(nil), buf[:n]...)}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer p.wg.Done()
			defer client.Close()
			for c := range chunks {
				time.Sleep(time.Until(c.at))
				if _, err := client.Write(c.b); err != nil {
					return
				}
			}
		}()
	}
}

// TestSlowRepliesWaiterDoesNotStarveOthers: a Client whose replies come
// back later than its retry window (the unlock timeout), while its
// commands reach Redis on time, waits on a Mutex that another Client's
// Lock waits on too. Its attempts are granted in Redis, but it never
// hears of it within an attempt's bound, and tries again as the same
// owner, which Redis grants again (a retry of a first hold): unless the
// library bounds that, the name stays held for a Lock that does not know
// it holds it, and the other waiter starves while nobody holds a Lease.
func TestSlowRepliesWaiterDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	r := redistest.StartProcess(t)
	const (
		unlockTimeout = 300 * time.Millisecond
		lease         = 1500 * time.Millisecond
		delay         = 360 * time.Millisecond // past the retry window, within the accept window
	)
	proxy := startSlowReplyProxy(t, r.Addr)
	newClient := func(addr string) *fairrw.Client {
		c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}),
			fairrw.WithLeaseTime(lease), fairrw.WithUnlockTimeout(unlockTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	slow, fast := newClient(proxy.addr()), newClient(r.Addr)
	const name = "slow-replies"

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	type outcome struct {
		who string
		l   *fairrw.Lease
		err error
		at  time.Time
	}
	results := make(chan outcome, 2)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	lock := func(who string, c *fairrw.Client) {
		l, err := c.Mutex(name).Lock(wctx)
		results <- outcome{who, l, err, time.Now()}
	}
	// The slow Client's Lock finds the name free: Redis grants its first
	// attempt, whose answer comes back after the attempt's bound.
	// The slow Client connects, and waits once (a subscription), while its
	// replies come at once.
	warm, err := fast.Mutex("warm").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = warm.Unlock(ctx)
	}()
	if l, err := slow.Mutex("warm").Lock(ctx); err != nil {
		t.Fatal(err)
	} else if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.delay.Store(int64(delay))
	go lock("slow", slow)
	// Its attempt reached Redis and was granted there: the name is held
	// for it, whether or not it hears of it.
	admin := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	for {
		n, err := admin.Do(ctx, admin.B().Exists().Key(name).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if wctx.Err() != nil {
			t.Fatal("the slow Client's Lock never reached Redis")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	go lock("fast", fast)
	const bound = 2*lease + 4*delay
	first := <-results
	took := first.at.Sub(start)
	if first.err != nil {
		t.Errorf("%s: Lock returned %v after %v; neither waiter was granted, though no Lease held the name", first.who, first.err, took.Round(time.Millisecond))
	} else if took > bound {
		t.Errorf("%s: granted %v after the slow one was granted in Redis (bound %v)", first.who, took.Round(time.Millisecond), bound)
	}
	if first.l != nil {
		_ = first.l.Unlock(ctx)
	}
	second := <-results
	if second.l != nil {
		_ = second.l.Unlock(ctx)
	}
	t.Logf("first %s after %v (%v); second %s after %v (%v)", first.who, took.Round(time.Millisecond), first.err, second.who, second.at.Sub(start).Round(time.Millisecond), second.err)
}

// TestSlowRepliesFurtherHoldLeavesNoHold: a further hold whose answer does
// not come before its ctx ends may have been granted in Redis: no Lease
// stands for it, so the owner writes back what its Leases hold. Its only
// Lease, left to expire, then frees the name at its deadline, not at the
// end of the further hold's longer lease, which would keep every other
// waiter out while no Lease holds the name.
func TestSlowRepliesFurtherHoldLeavesNoHold(t *testing.T) {
	t.Parallel()
	r := redistest.StartProcess(t)
	// A 1 s unlock timeout bounds each background try of the restate and
	// the give-back that free the name: with 300 ms tries and replies
	// 400 ms late, the name came free 3.8 s after the Lease's deadline
	// once, with two suites side by side (a background try as short as the
	// unlock timeout never sees an answer slower than it). A copy of the
	// further hold may land until its accept window (twice the unlock
	// timeout) ends, and the restate is written again after it, so the
	// Lease outlasts it.
	const (
		unlockTimeout = time.Second
		leaseTime     = 1500 * time.Millisecond // a refused waiter tries again every third of it
		top           = 4 * time.Second         // the owner's Lease, left to expire: past the accept window
		further       = 12 * time.Second        // the further hold's lease
		delay         = 400 * time.Millisecond  // replies held back: the further hold's ctx ends first
		slack         = 1500 * time.Millisecond
	)
	proxy := startSlowReplyProxy(t, r.Addr)
	ctl := lateness.Start(t)
	// The Clients' logs (the restate's background tries) are printed if
	// the test fails.
	var logMu sync.Mutex
	var logBuf bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("client logs:\n%s", logBuf.String())
			logMu.Unlock()
		}
	})
	newClient := func(addr string) *fairrw.Client {
		c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}),
			fairrw.WithLeaseTime(leaseTime), fairrw.WithUnlockTimeout(unlockTimeout),
			fairrw.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logBuf, addr}, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	slow, fast := newClient(proxy.addr()), newClient(r.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
		name := "slow-replies-further:" + mode.String()
		proxy.delay.Store(0)
		l, err := slow.RWMutex(name).Lock(ctx, fairrw.WithLease(top))
		if err != nil {
			t.Fatal(err)
		}
		proxy.delay.Store(int64(delay))
		fctx, fcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		if mode == fairrw.Write {
			_, err = l.Lock(fctx, fairrw.WithLease(further))
		} else {
			_, err = l.RLock(fctx, fairrw.WithLease(further))
		}
		fcancel()
		if err == nil {
			t.Fatalf("a further %s answered %v late returned within a 50 ms ctx", mode, delay)
		}
		// Replies come on time again: what the owner left to the
		// background is answered at once.
		proxy.delay.Store(0)
		// l is left to expire: the name is free at its deadline.
		wctx, wcancel := context.WithTimeout(ctx, further)
		got, err := fast.RWMutex(name).Lock(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("further %s: another Client's Lock, with the owner's only Lease left to expire at %s: %v (%v after it)",
				mode, l.Deadline().Format("15:04:05.000"), err, time.Since(l.Deadline()).Round(time.Millisecond))
		}
		// Within slack of the Lease's deadline, plus what the machine
		// added to a wait meanwhile (the control's worst).
		ctl.Within("further "+mode.String()+": another Client's Lock after the owner's only Lease expired (Redis kept the further hold?)", time.Since(l.Deadline()), slack)
		if err := got.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlowRepliesRenewalsStillConfirm: a Redis whose answers come later
// than a renew interval, but well within a lease, still keeps a
// watchdog's Leases: each round is reported failed when its interval
// ends, and its answer, when it comes, confirms the lease from when the
// round was sent. (Dropping late answers lost every lease of a Client
// whose Redis was this slow, while Redis renewed them all.)
func TestSlowRepliesRenewalsStillConfirm(t *testing.T) {
	t.Parallel()
	r := redistest.StartProcess(t)
	// A round every second, each answered 1.2 s late: the next answer
	// confirms 0.8 s before the last one's deadline. On a loaded machine
	// the proxy, Redis and the Client run late too: a try during which
	// the control saw the machine or Redis stall for half that margin is
	// made again, up to three tries, the last of which must pass.
	const (
		leaseTime = 3 * time.Second
		delay     = 1200 * time.Millisecond // past the interval, within the lease
		hold      = 7 * time.Second
		margin    = leaseTime - leaseTime/3 - delay
	)
	ctl := lateness.Start(t)
	ctl.WatchRedis(t, r.Addr, "control")
	for try := 1; ; try++ {
		began := time.Now()
		err := holdThroughSlowRenewals(t, r.Addr, fmt.Sprintf("slow-renewals:%d", try), leaseTime, delay, hold)
		if err == nil {
			return
		}
		stall := max(ctl.WorstStall(began, time.Now(), false), ctl.WorstStall(began, time.Now(), true))
		if try < 3 && stall >= margin/2 {
			t.Logf("try %d failed while the machine or Redis stalled %v (the margin is %v): %v; trying again", try, stall, margin, err)
			continue
		}
		t.Fatalf("try %d (the control's worst stall meanwhile %v): %v", try, stall, err)
	}
}

// holdThroughSlowRenewals takes a watchdog write on name through a proxy
// whose replies come delay late once a renewal confirmed it, holds it for
// hold, and checks that the Lease stayed alive and confirmed, and that
// Redis holds it.
func holdThroughSlowRenewals(t *testing.T, addr, name string, leaseTime, delay, hold time.Duration) error {
	proxy := startSlowReplyProxy(t, addr)
	// rueidis sends a round late on a slow Redis twice over
	// (docs/operations.md): on a connection it opens as it first uses it
	// (4 by default), after the handshake's late answer; and while the
	// PING it sends a connection idle for its keepalive (1 s by default)
	// awaits its late answer, after it. Such a round is answered twice the
	// delay after it was sent (seen: 2.4 s, past its lease's deadline).
	// The test is of late answers: one connection, opened before the
	// delay, and a keepalive longer than the hold.
	opt := rueidis.ClientOption{InitAddress: []string{proxy.addr()}, DisableCache: true, PipelineMultiplex: -1}
	opt.Dialer.KeepAlive = 4 * hold
	c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithLeaseTime(leaseTime))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.RWMutex(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx) //nolint:errcheck // checked below when it matters
	// One round on time first: it loads the renewal script (a NOSCRIPT
	// answer, then EVAL, would be two late round trips).
	for first := l.Deadline(); !l.Deadline().After(first); {
		if ctx.Err() != nil {
			t.Fatal("no renewal confirmed the Lease with Redis answering on time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	first := l.Deadline()
	proxy.delay.Store(int64(delay))
	select {
	case <-l.Done():
		return fmt.Errorf("the Lease was lost while Redis answered its renewals %v late (lease %v): %w", delay, leaseTime, l.Err())
	case <-time.After(hold):
	}
	if !l.Deadline().After(first.Add(hold - leaseTime)) {
		return fmt.Errorf("after %v of renewals answered %v late, the Lease's deadline is %v, first %v: not confirmed since",
			hold, delay, l.Deadline().Format("15:04:05.000"), first.Format("15:04:05.000"))
	}
	// Redis still holds it.
	info, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	proxy.delay.Store(0)
	if len(info.Holders) != 1 {
		t.Fatalf("Inspect: %d holders, want the one Lease's", len(info.Holders))
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return nil
}

// TestSlowRepliesCloseEndsALateRound: Close while a renewal round's calls
// are still under way on a Redis that answers late (their bound is a
// lease) ends them at once: Close does not wait for their answers, the Lease ends as closed, not renewed by a late answer, and no
// goroutine of the round is left (TestMain's goleak).
func TestSlowRepliesCloseEndsALateRound(t *testing.T) {
	t.Parallel()
	r := redistest.StartProcess(t)
	const (
		leaseTime = 6 * time.Second // a round every 2 s, its calls bounded by 6 s
		delay     = 5500 * time.Millisecond
	)
	ctl := lateness.Start(t)
	proxy := startSlowReplyProxy(t, r.Addr)
	// rueidis closes each connection by a PING it waits for a second at
	// most: one connection (not the 4 it opens by default as it uses
	// them), so that its close takes a second, not one per connection
	// (5 s with two suites side by side).
	c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{proxy.addr()}, DisableCache: true, PipelineMultiplex: -1}),
		fairrw.WithLeaseTime(leaseTime))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.RWMutex("slow-close").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy.delay.Store(int64(delay))
	// Past the first round's interval: its calls wait for their answers.
	time.Sleep(leaseTime/3 + leaseTime/6)
	// Waiting for the round's answer would take Close 4.5 s more; closing
	// the rueidis client takes up to a second per connection whatever is
	// pending (rueidis's own close waits that long for a PING's reply).
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ctl.Within("Close with a late round's calls under way", time.Since(start), 3*time.Second)
	if err := l.Err(); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("the Lease after Close: %v, want ErrClosed", err)
	}
	proxy.delay.Store(0)
}

// lockedWriter appends what it is given to b under mu, after name.
type lockedWriter struct {
	mu   *sync.Mutex
	b    *bytes.Buffer
	name string
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.WriteString(w.name + " ")
	return w.b.Write(p)
}
