package inspect

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestInspectChangesNothing: on a copy of live locks (every policy and a
// Mutex, with holders and waiters) in a server where nothing else runs,
// Inspect leaves every key, value and expiry as it was, and Redis counts
// no write; on Redis 7 it ran read-only (EVALSHA_RO).
func TestInspectChangesNothing(t *testing.T) {
	live := redistest.Start(t)
	ctx := itest.TestCtx(t)
	var names []string
	for _, p := range itest.Policies {
		name := "inspect:same:" + p.String()
		names = append(names, name)
		c := itest.NewClient(t, live, itest.Transports[0], fairrw.WithPolicy(p))
		w := itest.MustLease(t)(c.RWMutex(name).Lock(ctx))
		itest.MustLease(t)(w.RLock(ctx))
		itest.StartWaiter(t, itest.NewClient(t, live, itest.Transports[0], fairrw.WithPolicy(p)).RWMutex(name).Lock)
		itest.StartWaiter(t, itest.NewClient(t, live, itest.Transports[0], fairrw.WithPolicy(p)).RWMutex(name).RLock)
		reads := "inspect:same:reads:" + p.String()
		names = append(names, reads)
		itest.MustLease(t)(c.RWMutex(reads).RLock(ctx))
		itest.MustLease(t)(c.RWMutex(reads).RLock(ctx, fairrw.WithLease(time.Minute)))
	}
	mc := itest.NewClient(t, live, itest.Transports[0])
	itest.MustLease(t)(mc.Mutex("inspect:same:mutex").Lock(ctx))
	names = append(names, "inspect:same:mutex")
	// The waiters' first attempts, and the fencing keys' second (so that
	// none expires on the copy while it is compared).
	time.Sleep(1100 * time.Millisecond)

	quiet := itest.NewBadEnv(t)
	copyKeys(t, live.Client(t, itest.NoCache), quiet.Raw)
	c := quiet.Client(t, fairrw.WriterPreferring())
	_ = itest.Inspect(t, c, "warm-up") // connections and script cache
	before, stats, dirty := quiet.Snapshot(t), quiet.Stats(t), expiries(t, quiet.Raw)
	changes := rdbChanges(t, quiet.Raw)
	for _, name := range names {
		if info := itest.Inspect(t, c, name); info.Policy == "" || len(info.Holders) == 0 {
			t.Fatalf("%s on the copy: %+v", name, info)
		}
	}
	if got := rdbChanges(t, quiet.Raw); got != changes {
		t.Fatalf("Redis counted %d changes during Inspect", got-changes)
	}
	itest.WantSame(t, "Inspect", before, quiet.Snapshot(t))
	if after := expiries(t, quiet.Raw); !mapsEqual(dirty, after) {
		t.Fatalf("expiries changed:\n before %v\n after  %v", dirty, after)
	}
	after := quiet.Stats(t)
	if after.Calls["evalsha"] != stats.Calls["evalsha"] || after.Calls["eval"] != stats.Calls["eval"] {
		t.Fatalf("Inspect ran a script that may write (EVAL/EVALSHA): %v", after.Calls)
	}
	if after.Calls["evalsha_ro"]+after.Calls["eval_ro"] <= stats.Calls["evalsha_ro"]+stats.Calls["eval_ro"] {
		t.Fatalf("Inspect did not run read-only: %v", after.Calls)
	}
}

// copyKeys copies every key of from into to, with its absolute expiry.
func copyKeys(t testing.TB, from, to rueidis.Client) {
	t.Helper()
	ctx := itest.TestCtx(t)
	keys, err := from.Do(ctx, from.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		dump, err := from.Do(ctx, from.B().Dump().Key(k).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		at, err := from.Do(ctx, from.B().Pexpiretime().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		cmd := to.B().Restore().Key(k).Ttl(max(at, 0)).SerializedValue(dump).Replace()
		if at > 0 {
			err = to.Do(ctx, cmd.Absttl().Build()).Error()
		} else {
			err = to.Do(ctx, cmd.Build()).Error()
		}
		if err != nil {
			t.Fatalf("RESTORE %s: %v", k, err)
		}
	}
}

// expiries maps every key to its absolute expiry (PEXPIRETIME: unlike
// PTTL, it does not count down).
func expiries(t testing.TB, raw rueidis.Client) map[string]int64 {
	t.Helper()
	keys, err := raw.Do(itest.TestCtx(t), raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64, len(keys))
	for _, k := range keys {
		out[k], err = raw.Do(itest.TestCtx(t), raw.B().Pexpiretime().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// rdbChanges is Redis's count of writes since the last save.
func rdbChanges(t testing.TB, raw rueidis.Client) int64 {
	t.Helper()
	info, err := raw.Do(itest.TestCtx(t), raw.B().Info().Section("persistence").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rdb_changes_since_last_save:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("INFO persistence has no rdb_changes_since_last_save")
	return 0
}
