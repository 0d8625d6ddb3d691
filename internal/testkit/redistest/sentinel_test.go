package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// needRedisSentinel applies the FAIRRW_REQUIRE_REDIS rule to tests that call
// StartSentinel through a FakeTB.
func needRedisSentinel(t *testing.T) {
	t.Helper()
	needRedisServer(t)
	if _, err := lookRedisSentinel(); err != nil {
		unavailable(t, requireRedis(), EnvRequireRedis, "redis-sentinel not found on PATH: %v", err)
	}
}

// eventuallyWrites writes a fresh value of key through c until it can be
// read back from a direct client of want: until c's writes reach want.
func eventuallyWrites(t *testing.T, c rueidis.Client, want *Redis, key string) {
	t.Helper()
	direct := want.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lastErr error
	for i := 0; ctx.Err() == nil; i++ {
		value := strconv.Itoa(i)
		lastErr = c.Do(ctx, c.B().Set().Key(key).Value(value).Build()).Error()
		if lastErr == nil {
			got, err := direct.Do(ctx, direct.B().Get().Key(key).Build()).ToString()
			if err == nil && got == value {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("writes through the sentinel never reached %s (last error %v)", want.Addr, lastErr)
}

func role(t *testing.T, r *Redis) string {
	t.Helper()
	c := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	reply, err := c.Do(context.Background(), c.B().Role().Build()).ToArray()
	if err != nil {
		t.Fatalf("ROLE on %s: %v", r.Addr, err)
	}
	got, _ := reply[0].ToString()
	return got
}

func TestStartSentinel(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	if s.MasterSet != SentinelMasterSet || !strings.HasPrefix(s.Addr, "127.0.0.1:") {
		t.Fatalf("MasterSet %q Addr %q", s.MasterSet, s.Addr)
	}
	if got := role(t, s.Primary); got != "master" {
		t.Fatalf("primary %s has role %q", s.Primary.Addr, got)
	}
	if got := role(t, s.Replica); got != "slave" {
		t.Fatalf("replica %s has role %q", s.Replica.Addr, got)
	}
	if got := s.CurrentPrimary(t); got != s.Primary {
		t.Fatalf("CurrentPrimary %s, want %s", got.Addr, s.Primary.Addr)
	}
	opt := s.ClientOption()
	if len(opt.InitAddress) != 1 || opt.InitAddress[0] != s.Addr || opt.Sentinel.MasterSet != s.MasterSet {
		t.Fatalf("option %+v", opt)
	}
	c := s.Client(t, nil)
	if c.Mode() != rueidis.ClientModeSentinel {
		t.Fatalf("client mode %v", c.Mode())
	}
	eventuallyWrites(t, c, s.Primary, "k")
	eventuallyWrites(t, c, s.Replica, "k") // and they replicate
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	old := s.Primary
	c := s.Client(t, nil)
	eventuallyWrites(t, c, old, "before")

	promoted := s.Failover(t)
	if promoted == old || s.Primary != promoted || s.Replica != old {
		t.Fatalf("after Failover: returned %s, Primary %s, Replica %s; old primary %s",
			promoted.Addr, s.Primary.Addr, s.Replica.Addr, old.Addr)
	}
	if got := role(t, promoted); got != "master" {
		t.Fatalf("promoted %s has role %q", promoted.Addr, got)
	}
	if got := s.CurrentPrimary(t); got != promoted {
		t.Fatalf("CurrentPrimary %s, want %s", got.Addr, promoted.Addr)
	}
	// The Sentinel-mode client follows the promotion.
	eventuallyWrites(t, c, promoted, "after")

	// The sentinel makes the old primary a replica of the new one by itself
	// (about 8s later), and then fails back to it.
	start := time.Now()
	if got := s.Failover(t); got != old {
		t.Fatalf("Failover back promoted %s, want %s", got.Addr, old.Addr)
	}
	t.Logf("failed back %v after the first failover", time.Since(start).Round(time.Millisecond))
	eventuallyWrites(t, c, old, "back")
}

func TestSentinelAwaitFailoverAfterKill(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	old := s.Primary
	c := s.Client(t, nil)
	eventuallyWrites(t, c, old, "before")

	old.Kill(t)
	start := time.Now()
	promoted := s.AwaitFailover(t)
	t.Logf("the sentinel promoted %s %v after the primary's kill", promoted.Addr, time.Since(start).Round(time.Millisecond))
	if promoted == old || s.Primary != promoted {
		t.Fatalf("AwaitFailover returned %s, Primary %s; killed %s", promoted.Addr, s.Primary.Addr, old.Addr)
	}
	eventuallyWrites(t, c, promoted, "after")

	// The killed server comes back as a replica, and can be failed over to.
	s.AttachReplica(t)
	if s.Replica != old || role(t, old) != "slave" {
		t.Fatalf("after AttachReplica: Replica %s (killed %s) has role %q", s.Replica.Addr, old.Addr, role(t, s.Replica))
	}
	eventuallyWrites(t, c, promoted, "replicated")
	eventuallyWrites(t, c, old, "replicated")
	if got := s.Failover(t); got != old {
		t.Fatalf("Failover back promoted %s, want %s", got.Addr, old.Addr)
	}
	eventuallyWrites(t, c, old, "back")
}

func TestSentinelCleanupKillsProcesses(t *testing.T) {
	needRedisSentinel(t)
	t.Parallel()
	var pids []int
	f := RunFake(t, func(tb testing.TB) {
		s := StartSentinel(tb)
		pids = []int{pid(s.Primary), pid(s.Replica), pid(s.proc)}
		tb.Fatalf("test failed on purpose")
	})
	if f.fatal != "test failed on purpose" {
		t.Fatalf("fatal = %q", f.fatal)
	}
	if len(pids) != 3 {
		t.Fatalf("pids %v", pids)
	}
	for _, p := range pids {
		if p == 0 || !exited(p) {
			t.Fatalf("pid %d not killed at cleanup (pids %v)", p, pids)
		}
	}
}

func TestSentinelRequireRedisRule(t *testing.T) {
	// No parallel: changes the environment.
	t.Setenv("PATH", t.TempDir())

	t.Setenv(EnvRequireRedis, "")
	f := RunFake(t, func(tb testing.TB) { StartSentinel(tb) })
	if f.skip == "" || f.fatal != "" || !strings.Contains(f.skip, "redis-sentinel not found") {
		t.Fatalf("without %s: skip %q, fatal %q", EnvRequireRedis, f.skip, f.fatal)
	}

	t.Setenv(EnvRequireRedis, "1")
	f = RunFake(t, func(tb testing.TB) { StartSentinel(tb) })
	if f.fatal == "" || f.skip != "" || !strings.Contains(f.fatal, "redis-sentinel not found") {
		t.Fatalf("with %s=1: skip %q, fatal %q", EnvRequireRedis, f.skip, f.fatal)
	}
}
