package redistest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// needRedisServer applies the FAIRRW_REQUIRE_REDIS rule to tests that call
// redis-server-only helpers through a FakeTB.
func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := lookRedisServer(); err != nil {
		unavailable(t, requireRedis(), EnvRequireRedis, "redis-server not found on PATH: %v", err)
	}
}

func pid(r *Redis) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.cmd.Process.Pid
}

func rueidisPing(t *testing.T, c rueidis.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := c.Do(ctx, c.B().Ping().Build()).ToString()
	if err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
}

func TestStartProcessLifecycle(t *testing.T) {
	t.Parallel()
	r := StartProcess(t)
	if r.Kind != KindProcess || !strings.HasPrefix(r.Addr, "127.0.0.1:") {
		t.Fatalf("got Kind %q Addr %q", r.Kind, r.Addr)
	}
	if err := redisnet.Ping(r.Addr); err != nil {
		t.Fatal(err)
	}
	c := r.Client(t, nil)
	rueidisPing(t, c)
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}

	first := pid(r)
	r.Restart(t)
	if p := pid(r); p == 0 || p == first {
		t.Fatalf("pid after restart = %d, before %d", p, first)
	}
	if !exited(first) {
		t.Fatalf("old pid %d still exists after Restart", first)
	}
	if err := redisnet.Ping(r.Addr); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	// rueidis reconnects by itself; the data is gone (--save "").
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Do(ctx, c.B().Get().Key("k").Build()).Error()
		if rueidis.IsRedisNil(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	second := pid(r)
	r.Kill(t)
	if !exited(second) {
		t.Fatalf("pid %d still exists after Kill", second)
	}
	if err := redisnet.Ping(r.Addr); err == nil {
		t.Fatal("PING answered after Kill")
	}
	r.Kill(t) // no-op
	r.Stop(t) // no-op

	// Restart of a dead server starts it again on the same port.
	addr := r.Addr
	r.Restart(t)
	if r.Addr != addr {
		t.Fatalf("Addr changed from %s to %s", addr, r.Addr)
	}
	// The client's connection died with the server; it reconnects on use.
	deadline = time.Now().Add(5 * time.Second)
	for {
		err := c.Do(ctx, c.B().Ping().Build()).Error()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING after restarting a killed server: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	third := pid(r)
	r.Stop(t)
	if !exited(third) {
		t.Fatalf("pid %d still exists after Stop", third)
	}
	if err := redisnet.Ping(r.Addr); err == nil {
		t.Fatal("PING answered after Stop")
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	r := StartProcess(t)
	r.Pause(t)
	if _, err := redisnet.Command(r.Addr, 300*time.Millisecond, "PING"); err == nil {
		t.Fatal("paused server answered PING")
	}
	r.Resume(t)
	if err := redisnet.Ping(r.Addr); err != nil {
		t.Fatalf("after Resume: %v", err)
	}

	// Stop and Restart work on a paused server.
	r.Pause(t)
	r.Restart(t)
	if err := redisnet.Ping(r.Addr); err != nil {
		t.Fatalf("restart of paused server: %v", err)
	}
	r.Pause(t)
	p := pid(r)
	r.Stop(t)
	if !exited(p) {
		t.Fatalf("pid %d still exists after Stop of a paused server", p)
	}
}

func TestStartProcessExtraArgs(t *testing.T) {
	t.Parallel()
	r := StartProcess(t, "--maxmemory", "12mb", "--maxmemory-policy", "noeviction")
	c := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	got, err := c.Do(context.Background(), c.B().ConfigGet().Parameter("maxmemory").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if got["maxmemory"] != "12582912" {
		t.Fatalf("maxmemory = %q", got["maxmemory"])
	}
	got, err = c.Do(context.Background(), c.B().ConfigGet().Parameter("save").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if got["save"] != "" {
		t.Fatalf("save = %q, want empty", got["save"])
	}
}

func TestCleanupKillsProcess(t *testing.T) {
	needRedisServer(t)
	var p, paused int
	f := RunFake(t, func(tb testing.TB) {
		r := StartProcess(tb)
		p = pid(r)
		r2 := StartProcess(tb)
		r2.Pause(tb)
		paused = pid(r2)
		tb.Fatalf("test failed on purpose")
	})
	if f.fatal != "test failed on purpose" {
		t.Fatalf("fatal = %q", f.fatal)
	}
	for _, p := range []int{p, paused} {
		if p == 0 || !exited(p) {
			t.Fatalf("pid %d not killed at cleanup", p)
		}
	}
}

func TestStartProcessFailureShowsLog(t *testing.T) {
	needRedisServer(t)
	f := RunFake(t, func(tb testing.TB) {
		StartProcess(tb, "--no-such-directive", "x")
		tb.Errorf("StartProcess returned")
	})
	if !strings.Contains(f.fatal, "tail of") || !strings.Contains(f.fatal, "no-such-directive") {
		t.Fatalf("fatal message lacks the server log:\n%s", f.fatal)
	}
	t.Logf("failure message:\n%s", f.fatal)
}

func TestRequireRedisRule(t *testing.T) {
	// No parallel: changes the environment.
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvAddr, "")

	t.Setenv(EnvRequireRedis, "")
	f := RunFake(t, func(tb testing.TB) { StartProcess(tb) })
	if f.skip == "" || f.fatal != "" || !strings.Contains(f.skip, "redis-server not found") {
		t.Fatalf("without %s: skip %q, fatal %q", EnvRequireRedis, f.skip, f.fatal)
	}

	t.Setenv(EnvRequireRedis, "1")
	f = RunFake(t, func(tb testing.TB) { StartProcess(tb) })
	if f.fatal == "" || f.skip != "" || !strings.Contains(f.fatal, "redis-server not found") {
		t.Fatalf("with %s=1: skip %q, fatal %q", EnvRequireRedis, f.skip, f.fatal)
	}
}

func TestStartFromEnv(t *testing.T) {
	needRedisServer(t)
	srv := StartProcess(t)
	t.Setenv(EnvAddr, srv.Addr)

	r := Start(t)
	if r.Kind != KindEnv || r.Addr != srv.Addr {
		t.Fatalf("got Kind %q Addr %q", r.Kind, r.Addr)
	}
	rueidisPing(t, r.Client(t, nil))

	// Process-only methods refuse other kinds.
	t.Setenv(EnvRequireRedis, "")
	f := RunFake(t, func(tb testing.TB) { r.Restart(tb) })
	if !strings.Contains(f.skip, "StartProcess") {
		t.Fatalf("Restart on env: skip %q fatal %q", f.skip, f.fatal)
	}
	t.Setenv(EnvRequireRedis, "1")
	f = RunFake(t, func(tb testing.TB) { r.Kill(tb) })
	if !strings.Contains(f.fatal, "StartProcess") {
		t.Fatalf("Kill on env with %s=1: skip %q fatal %q", EnvRequireRedis, f.skip, f.fatal)
	}

	// An address that does not answer is an error, not a skip.
	defer func(d time.Duration) { envTimeout = d }(envTimeout)
	envTimeout = 300 * time.Millisecond
	t.Setenv(EnvAddr, "127.0.0.1:1")
	f = RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.fatal, EnvAddr) {
		t.Fatalf("unreachable %s: skip %q fatal %q", EnvAddr, f.skip, f.fatal)
	}
}

func TestStart(t *testing.T) {
	r := Start(t)
	t.Logf("Start gave a %s Redis at %s", r.Kind, r.Addr)
	rueidisPing(t, r.Client(t, nil))
}

func TestMiniredis(t *testing.T) {
	t.Parallel()
	m, opt := Miniredis(t)
	if !opt.DisableCache || !opt.AlwaysRESP2 || len(opt.InitAddress) != 1 || opt.InitAddress[0] != m.Addr() {
		t.Fatalf("option %+v", opt)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	rueidisPing(t, c)

	// TTLs run on the wall clock.
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Px(100*time.Millisecond).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
	time.Sleep(250 * time.Millisecond)
	if err := c.Do(ctx, c.B().Get().Key("k").Build()).Error(); !rueidis.IsRedisNil(err) {
		t.Fatalf("GET after TTL: %v, want nil", err)
	}
}

func TestStartWithNothing(t *testing.T) {
	// No parallel: changes the environment.
	// Start with nothing at all available follows FAIRRW_REQUIRE_REDIS.
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvAddr, "")
	t.Setenv(EnvRequireRedis, "")
	f := RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.skip, "no Redis available") {
		t.Fatalf("Start with nothing: skip %q, fatal %q", f.skip, f.fatal)
	}
	t.Setenv(EnvRequireRedis, "1")
	f = RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.fatal, "no Redis available") {
		t.Fatalf("Start with nothing, %s=1: skip %q, fatal %q", EnvRequireRedis, f.skip, f.fatal)
	}
}
