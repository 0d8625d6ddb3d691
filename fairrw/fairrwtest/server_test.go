package fairrwtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// kinds are the servers every scenario runs on.
var kinds = []struct {
	name string
	new  func(testing.TB) *fairrwtest.Server
}{
	{"miniredis", fairrwtest.NewServer},
	{"redis-server", fairrwtest.NewRedisServer},
}

// lockKind is a lock as two processes would share it: a write lock of each
// policy, and the Redisson-compatible Mutex.
type lockKind struct {
	name string
	opts []fairrw.Option
	lock func(c *fairrw.Client, ctx context.Context, name string) (*fairrw.Lease, error)
	try  func(c *fairrw.Client, ctx context.Context, name string) (*fairrw.Lease, error)
}

func lockKinds() []lockKind {
	var ks []lockKind
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair(), fairrw.Redisson()} {
		ks = append(ks, lockKind{
			name: p.String(),
			opts: []fairrw.Option{fairrw.WithPolicy(p)},
			lock: func(c *fairrw.Client, ctx context.Context, n string) (*fairrw.Lease, error) {
				return c.RWMutex(n).Lock(ctx)
			},
			try: func(c *fairrw.Client, ctx context.Context, n string) (*fairrw.Lease, error) {
				return c.RWMutex(n).TryLock(ctx)
			},
		})
	}
	return append(ks, lockKind{
		name: "mutex",
		lock: func(c *fairrw.Client, ctx context.Context, n string) (*fairrw.Lease, error) {
			return c.Mutex(n).Lock(ctx)
		},
		try: func(c *fairrw.Client, ctx context.Context, n string) (*fairrw.Lease, error) {
			return c.Mutex(n).TryLock(ctx)
		},
	})
}

type acquired struct {
	lease *fairrw.Lease
	err   error
	at    time.Time
}

// TestTwoClientsShareServer: two Clients on one Server exclude each other
// as two processes do, and a release wakes the other's waiter at once (by
// pub/sub on miniredis: its lease, 30s, would be the only other bound).
func TestTwoClientsShareServer(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			srv := kind.new(t)
			for _, lk := range lockKinds() {
				t.Run(lk.name, func(t *testing.T) {
					ctx := t.Context()
					a, b := srv.NewClient(t, lk.opts...), srv.NewClient(t, lk.opts...)
					held, err := lk.lock(a, ctx, "shared")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := lk.try(b, ctx, "shared"); !errors.Is(err, fairrw.ErrNotAcquired) {
						t.Fatalf("second Client's TryLock: %v, want ErrNotAcquired", err)
					}
					got := make(chan acquired, 1)
					go func() {
						l, err := lk.lock(b, ctx, "shared")
						got <- acquired{l, err, time.Now()}
					}()
					select {
					case r := <-got:
						t.Fatalf("second Client's Lock returned (%v) while the first holds the lock", r.err)
					case <-time.After(100 * time.Millisecond):
					}
					released := time.Now()
					if err := held.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					select {
					case r := <-got:
						if r.err != nil {
							t.Fatalf("second Client's Lock: %v", r.err)
						}
						if waited := r.at.Sub(released); waited > 5*time.Second {
							t.Errorf("woken %v after the release, want a wake-up, not the lease", waited)
						}
						if err := r.lease.Unlock(ctx); err != nil {
							t.Fatal(err)
						}
					case <-time.After(10 * time.Second):
						t.Fatal("second Client's Lock not granted 10s after the release")
					}
				})
			}
		})
	}
}

// TestDeadHolderLeaseExpires: a Client closed while holding (a process that
// died) keeps the lock until its lease runs out, in real time, and not
// longer: the other Client's waiter gets it then.
func TestDeadHolderLeaseExpires(t *testing.T) {
	const lease = 400 * time.Millisecond
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			srv := kind.new(t)
			for _, lk := range lockKinds() {
				t.Run(lk.name, func(t *testing.T) {
					ctx := t.Context()
					dead := srv.NewClient(t, append(lk.opts, fairrw.WithLeaseTime(lease))...)
					alive := srv.NewClient(t, lk.opts...)
					before := time.Now()
					held, err := lk.lock(dead, ctx, "dead")
					if err != nil {
						t.Fatal(err)
					}
					if err := dead.Close(); err != nil {
						t.Fatal(err)
					}
					if !errors.Is(held.Err(), fairrw.ErrLeaseLost) {
						t.Errorf("dead holder's lease: %v, want ErrLeaseLost", held.Err())
					}
					if _, err := lk.try(alive, ctx, "dead"); !errors.Is(err, fairrw.ErrNotAcquired) {
						t.Fatalf("TryLock right after the holder died: %v, want ErrNotAcquired", err)
					}
					wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					l, err := lk.lock(alive, wctx, "dead")
					if err != nil {
						t.Fatalf("Lock after the dead holder's lease: %v", err)
					}
					// The grant cannot precede the lease's end; Redis's
					// clock is read in whole ms.
					if waited := time.Since(before); waited < lease-5*time.Millisecond {
						t.Errorf("granted %v after the dead holder's acquire, before its %v lease ran out", waited, lease)
					}
					if err := l.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// TestRedisServer: the real server is a standalone Redis that fairrw uses
// with RESP3 and client tracking (what miniredis cannot give), and it is
// gone, port and directory, once closed.
func TestRedisServer(t *testing.T) {
	srv := fairrwtest.NewRedisServer(t)
	if srv.Miniredis() != nil {
		t.Error("Miniredis() of a redis-server is not nil")
	}
	opt := srv.ClientOption()
	if opt.DisableCache || opt.AlwaysRESP2 {
		t.Errorf("ClientOption turns client tracking off: DisableCache=%v AlwaysRESP2=%v", opt.DisableCache, opt.AlwaysRESP2)
	}
	// Without tracking itself, so that CLIENT LIST shows fairrw's.
	opt.DisableCache = true
	raw, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if raw.Mode() != rueidis.ClientModeStandalone {
		t.Errorf("rueidis mode %v, want standalone", raw.Mode())
	}
	// A Redisson waiter arms tracking on the lock key: its connection is
	// then in tracking mode, which CLIENT LIST shows with the flag t.
	c := srv.NewClient(t, fairrw.WithPolicy(fairrw.Redisson()))
	held, err := c.RWMutex("tracked").Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, _ = c.RWMutex("tracked").Lock(ctx)
	list, err := raw.Do(t.Context(), raw.B().ClientList().Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	if !tracking(list) {
		t.Errorf("no connection with client tracking on the redis-server:\n%s", list)
	}
	_ = held.Unlock(t.Context())

	dir := serverDir(t, raw)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := raw.Do(t.Context(), raw.B().Ping().Build()).Error(); err == nil {
		t.Error("the redis-server still answers PING after Close")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server's directory %s after Close: %v, want it removed", dir, err)
	}
}

func tracking(clientList string) bool {
	for line := range strings.SplitSeq(clientList, "\n") {
		for field := range strings.FieldsSeq(line) {
			if flags, ok := strings.CutPrefix(field, "flags="); ok && strings.Contains(flags, "t") {
				return true
			}
		}
	}
	return false
}

func serverDir(t *testing.T, raw rueidis.Client) string {
	t.Helper()
	kv, err := raw.Do(t.Context(), raw.B().ConfigGet().Parameter("dir").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	return kv["dir"]
}

// TestCleanupLeavesNothing: whatever a test leaves held or waiting, its
// cleanups close every Client and Server: no goroutine survives it and the
// redis-server process is gone.
func TestCleanupLeavesNothing(t *testing.T) {
	before := goleak.IgnoreCurrent()
	var realAddr string
	var waiters []chan error
	t.Run("use", func(t *testing.T) {
		ctx := t.Context()
		mini := fairrwtest.NewServer(t)
		real := fairrwtest.NewRedisServer(t)
		realAddr = real.ClientOption().InitAddress[0]
		for i, c := range []*fairrw.Client{fairrwtest.NewClient(t), mini.NewClient(t), real.NewClient(t), real.NewClient(t)} {
			name := fmt.Sprint("left:", i)                        // a writer waits on each
			if _, err := c.RWMutex(name).RLock(ctx); err != nil { // never unlocked
				t.Fatal(err)
			}
			waiting := make(chan error, 1)
			waiters = append(waiters, waiting)
			go func() { // a waiter that only the cleanup's Close ends
				_, err := c.RWMutex(name).Lock(context.Background())
				waiting <- err
			}()
		}
	})
	for _, w := range waiters {
		if err := <-w; !errors.Is(err, fairrw.ErrClosed) {
			t.Errorf("waiter at cleanup: %v, want ErrClosed", err)
		}
	}
	goleak.VerifyNone(t, before)
	if realAddr == "" {
		return
	}
	if raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{realAddr}, ForceSingleClient: true}); err == nil {
		raw.Close()
		t.Errorf("the redis-server at %s still answers after its test ended", realAddr)
	}
}

// TestStart: the constructor without testing.TB, for Examples and TestMain.
func TestStart(t *testing.T) {
	srv, err := fairrwtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	c, err := fairrw.New(fairrw.WithClientOption(srv.ClientOption()))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.RWMutex("start").Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Miniredis().Keys()); n == 0 {
		t.Error("no key in the server while a lock is held")
	}
	_ = l.Unlock(t.Context())
	_ = c.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMisuse: what would break the helpers fails the test, or returns an
// error, that says why.
func TestMisuse(t *testing.T) {
	t.Run("default rueidis options on miniredis", func(t *testing.T) {
		// Why ClientOption exists: rueidis's defaults need client tracking.
		// (ForceSingleClient only spares the test the goroutine rueidis's
		// cluster probe leaves sleeping when the connection fails.)
		srv := fairrwtest.NewServer(t)
		c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: srv.ClientOption().InitAddress, ForceSingleClient: true}))
		if err == nil {
			_ = c.Close()
			t.Fatal("fairrw.New with rueidis's default options connected to miniredis; update the package doc")
		}
		// The error says what to do about it.
		if !errors.Is(err, rueidis.ErrNoCache) || !strings.Contains(err.Error(), "DisableCache") ||
			!strings.Contains(err.Error(), "fairrwtest") {
			t.Fatalf("fairrw.New on miniredis: %v, want rueidis.ErrNoCache with a hint at DisableCache and fairrwtest", err)
		}
	})
	t.Run("WithClientOption", func(t *testing.T) {
		// Overridden: the Client is on srv, never on another Redis.
		srv := fairrwtest.NewServer(t)
		other := fairrwtest.NewServer(t)
		c := srv.NewClient(t, fairrw.WithClientOption(other.ClientOption()))
		l, err := c.RWMutex("where").Lock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(t.Context())
		if len(srv.Miniredis().Keys()) == 0 || len(other.Miniredis().Keys()) != 0 {
			t.Errorf("lock keys on the server: %v, on the other: %v; want them on the server only",
				srv.Miniredis().Keys(), other.Miniredis().Keys())
		}
	})
	t.Run("WithClient", func(t *testing.T) {
		srv := fairrwtest.NewServer(t)
		raw, err := rueidis.NewClient(srv.ClientOption())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		r := run(t, func(tb testing.TB) {
			fairrwtest.NewClient(tb, fairrw.WithClient(raw))
			tb.Errorf("NewClient returned")
		})
		wantFailure(t, r, "WithClient")
	})
	t.Run("invalid option", func(t *testing.T) {
		r := run(t, func(tb testing.TB) {
			fairrwtest.NewClient(tb, fairrw.WithLeaseTime(time.Millisecond))
			tb.Errorf("NewClient returned")
		})
		wantFailure(t, r, "lease time")
	})
	t.Run("closed server", func(t *testing.T) {
		srv := fairrwtest.NewServer(t)
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		r := run(t, func(tb testing.TB) {
			srv.NewClient(tb)
			tb.Errorf("NewClient returned")
		})
		wantFailure(t, r, "fairrwtest: server closed")
	})
	t.Run("ClientOption is a copy", func(t *testing.T) {
		srv := fairrwtest.NewServer(t)
		opt := srv.ClientOption()
		addr := opt.InitAddress[0]
		opt.InitAddress[0] = "elsewhere:1"
		opt.DisableCache = false
		if got := srv.ClientOption(); got.InitAddress[0] != addr || !got.DisableCache {
			t.Errorf("ClientOption changed by its caller: %+v", got)
		}
	})
	t.Run("no redis-server on PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		t.Setenv("FAIRRW_REQUIRE_REDIS", "")
		if _, err := fairrwtest.StartRedisServer(); !errors.Is(err, exec.ErrNotFound) {
			t.Fatalf("StartRedisServer: %v, want exec.ErrNotFound", err)
		}
		r := run(t, func(tb testing.TB) { fairrwtest.NewRedisServer(tb) })
		if !r.Skipped() || r.Failed() || !strings.Contains(r.output(), "FAIRRW_REQUIRE_REDIS") {
			t.Errorf("NewRedisServer without redis-server: skipped=%v failed=%v %s, want a skip naming %s",
				r.Skipped(), r.Failed(), r.output(), "FAIRRW_REQUIRE_REDIS")
		}
		t.Setenv("FAIRRW_REQUIRE_REDIS", "1")
		r = run(t, func(tb testing.TB) { fairrwtest.NewRedisServer(tb) })
		wantFailure(t, r, "redis-server is not on PATH")
	})
}

func wantFailure(t *testing.T, r *recordingTB, want string) {
	t.Helper()
	if !r.Failed() || r.Skipped() || !strings.Contains(r.output(), want) {
		t.Errorf("failed=%v skipped=%v %s, want a failure naming %q", r.Failed(), r.Skipped(), r.output(), want)
	}
}
