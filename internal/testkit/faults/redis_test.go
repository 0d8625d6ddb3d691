package faults

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestScriptFlush is not parallel: with FAIRRW_REDIS_ADDR the Redis, and so
// the script cache it flushes, may be shared with other tests.
func TestScriptFlush(t *testing.T) {
	r := redistest.Start(t)
	d := direct(t, r)
	sha, err := d.Do(within(t, bound), d.B().ScriptLoad().Script("return 1").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	exists := func() int64 {
		t.Helper()
		v, err := d.Do(within(t, bound), d.B().ScriptExists().Sha1(sha).Build()).AsIntSlice()
		if err != nil || len(v) != 1 {
			t.Fatalf("SCRIPT EXISTS = %v, %v", v, err)
		}
		return v[0]
	}
	if exists() != 1 {
		t.Fatal("script not loaded")
	}
	if err := ScriptFlush(within(t, bound), r.Addr); err != nil {
		t.Fatal(err)
	}
	if exists() != 0 {
		t.Fatal("script still cached after ScriptFlush")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ScriptFlush(ctx, r.Addr); err != context.Canceled {
		t.Fatalf("ScriptFlush with a cancelled context: %v", err)
	}
	port, err := redisnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := ScriptFlush(within(t, bound), "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Fatal("ScriptFlush without a server succeeded")
	}
}

func TestPair(t *testing.T) {
	t.Parallel()
	pair := StartPair(t)
	noCache := func(o *rueidis.ClientOption) { o.DisableCache = true }
	pc, rc := pair.Primary.Client(t, noCache), pair.Replica.Client(t, noCache)
	k := key(t)

	if err := pc.Do(within(t, bound), pc.B().Set().Key(k).Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := pair.WaitSynced(within(t, bound)); err != nil {
		t.Fatal(err)
	}
	if v := get(t, rc, k); v != "v" {
		t.Fatalf("replica: %s = %q after WaitSynced, want v", k, v)
	}
	err := rc.Do(within(t, bound), rc.B().Set().Key(k).Value("w").Build()).Error()
	if err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("SET on the replica: %v, want READONLY", err)
	}

	pair.Primary.Kill(t)
	if err := pair.Promote(within(t, bound)); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(within(t, bound), rc.B().Set().Key(k).Value("w").Build()).Error(); err != nil {
		t.Fatalf("SET on the promoted replica: %v", err)
	}
	if v := get(t, rc, k); v != "w" {
		t.Fatalf("promoted replica: %s = %q, want w", k, v)
	}
}
