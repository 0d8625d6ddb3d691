package wait

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// connEnv is a registry on a miniredis whose dials are counted: the rules
// of connections.go are about which subscription goes on which connection,
// and when one closes.
type connEnv struct {
	m     *miniredis.Miniredis
	rdb   rueidis.Client
	r     *Registry
	dials atomic.Int64
}

func newConnEnv(t *testing.T) *connEnv {
	t.Helper()
	m, opt := redistest.Miniredis(t)
	e := &connEnv{m: m}
	opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
		e.dials.Add(1)
		return d.DialContext(ctx, "tcp", addr)
	}
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	e.rdb = rdb
	e.r = NewRegistry(Config{
		Redis:   func() rueidis.Client { return rdb },
		Publish: func() string { return compat.Publish },
		Closing: make(chan struct{}),
		Halt:    context.Background(),
	})
	t.Cleanup(func() {
		e.r.Close()
		rdb.Close()
	})
	return e
}

// join adds a waiter on channel and waits for its group's subscription.
func (e *connEnv) join(t *testing.T, channel string) *Waiter {
	t.Helper()
	w := e.r.Join(&Keys{Channel: channel, Format: FairFormat}, Write, "o")
	select {
	case <-w.group.ready:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no subscription within 10 s", channel)
	}
	return w
}

// subscribers waits up to 10 s until channel counts want subscribers.
func (e *connEnv) subscribers(t *testing.T, channel string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.m.PubSubNumSub(channel)[channel]
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d subscribers after 10 s, want %d", channel, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// live waits up to 10 s until n groups are on connections: a group's
// goroutine takes it off its connection after Leave returns.
func (e *connEnv) live(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.r.mu.Lock()
		got := 0
		for c := range e.r.allConns {
			got += c.live
		}
		e.r.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d groups on connections after 10 s, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *connEnv) conns() int {
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	return len(e.r.allConns)
}

func TestSubscriptionConnections(t *testing.T) {
	t.Run("groups share one connection, which ends their subscriptions when it closes", func(t *testing.T) {
		e := newConnEnv(t)
		a, b := e.join(t, "a"), e.join(t, "b")
		if n := e.conns(); n != 1 {
			t.Fatalf("%d connections for two groups, want 1 (shared)", n)
		}
		e.r.Leave(a)
		e.r.Leave(b)
		// Closed once no group came for connLinger; what Redis counts goes
		// with it, never through an UNSUBSCRIBE.
		e.subscribers(t, "a", 0)
		e.subscribers(t, "b", 0)
		if n := e.conns(); n != 0 {
			t.Fatalf("%d connections left with no group, want 0", n)
		}
	})
	t.Run("a lock contended again within the linger keeps its connection", func(t *testing.T) {
		e := newConnEnv(t)
		e.r.Leave(e.join(t, "a"))
		e.live(t, 0)
		// Judged only where the next group came well within connLinger of
		// the connection's last group leaving, as measured here: a loaded
		// machine that ran the join a second late would see a dial rightly.
		judged := 0
		var late []time.Duration
		for try := 0; judged < 5 && try < 20; try++ {
			idle := time.Now() // no group on the connection since at most now
			before := e.dials.Load()
			w := e.join(t, "a")
			gap := time.Since(idle)
			dials := e.dials.Load() - before
			e.r.Leave(w)
			e.live(t, 0)
			if gap >= connLinger/2 {
				late = append(late, gap)
				continue
			}
			judged++
			if dials != 0 {
				t.Fatalf("%d dials for a contention %v after the last (linger %v), want 0", dials, gap, connLinger)
			}
		}
		if judged < 5 {
			t.Fatalf("only %d of 20 contentions came within %v of the last (the others after %v): the machine ran them too late to judge", judged, connLinger/2, late)
		}
	})
	t.Run("a connection with maxStale ended subscriptions takes no new group", func(t *testing.T) {
		e := newConnEnv(t)
		keep := e.join(t, "keep") // keeps the first connection open throughout
		base := e.dials.Load()
		for i := range maxStale {
			if n := e.conns(); n != 1 {
				t.Fatalf("%d connections after %d ended subscriptions, want 1", n, i)
			}
			e.r.Leave(e.join(t, "c"+strconv.Itoa(i)))
			e.live(t, 1)
		}
		if got := e.dials.Load() - base; got != 0 {
			t.Fatalf("%d dials before maxStale, want 0", got)
		}
		next := e.join(t, "next")
		if got := e.dials.Load() - base; got == 0 {
			t.Fatal("no dial once maxStale subscriptions ended, want a new connection")
		}
		if n := e.conns(); n != 2 {
			t.Fatalf("%d connections, want 2 (the retired one and the new)", n)
		}
		e.r.Leave(keep) // the retired connection's last group: it closes at once
		e.subscribers(t, "c0", 0)
		e.subscribers(t, "keep", 0)
		e.subscribers(t, "next", 1)
		e.r.Leave(next)
	})
	t.Run("a lost connection's groups subscribe again on a new one", func(t *testing.T) {
		e := newConnEnv(t)
		w := e.join(t, "a")
		base := e.dials.Load()
		e.m.Close() // drops every connection (and its subscriptions)
		if err := e.m.Restart(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for e.dials.Load()-base < 2 || e.m.PubSubNumSub("a")["a"] != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("after the restart: %d dials, %d subscribers; want a new connection and 1",
					e.dials.Load()-base, e.m.PubSubNumSub("a")["a"])
			}
			time.Sleep(5 * time.Millisecond)
		}
		e.r.Leave(w)
	})
	t.Run("the registry's close closes every connection, lingering or not", func(t *testing.T) {
		e := newConnEnv(t)
		e.r.Leave(e.join(t, "a")) // lingers
		w := e.join(t, "b")       // on the same connection
		e.r.Leave(w)
		done := make(chan struct{})
		go func() {
			e.r.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return within 10 s")
		}
		if n := e.conns(); n != 0 {
			t.Fatalf("%d connections left after Close, want 0", n)
		}
		e.subscribers(t, "a", 0)
		e.subscribers(t, "b", 0)
	})
}
