package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/wire"
)

// functionLibrary is the fair fast path (the composed acquire and the fast
// release) as a Redis Functions library: each script's text, unchanged, is
// the body of a function of KEYS and ARGV.
func functionLibrary(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s\n", name)
	for _, f := range []struct{ name, src string }{
		{"fair_acquire", lua.FairAcquire()},
		{"fair_unlock_fast", lua.Source("fair_unlock_fast")},
	} {
		fmt.Fprintf(&b, "redis.register_function('%s_%s', function(KEYS, ARGV)\n%s\nend)\n", name, f.name, f.src)
	}
	return b.String()
}

// BenchmarkFunctionVsEval measures what Redis Functions (FUNCTION LOAD once,
// then FCALL) would save the server against EVALSHA, which fairrw sends: the
// fair policies' uncontended cycle (the fast acquire and the fast release,
// the same text either way, with the same KEYS and ARGV rendered by
// internal/wire) for a write and a read, 64 goroutines each on its own
// name, then the janitor's DEL of the latch. Metrics as
// BenchmarkServerCost's; redis-cpu-µs/op is the figure to compare.
func BenchmarkFunctionVsEval(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	const lib = "fairrw_probe"
	if err := e.raw.Do(ctx, e.raw.B().FunctionLoad().Replace().FunctionCode(functionLibrary(lib)).Build()).Error(); err != nil {
		b.Skipf("FUNCTION LOAD: %v (Redis 7+ only)", err)
	}
	acquire := rueidis.NewLuaScript(lua.FairAcquire())
	release := rueidis.NewLuaScript(lua.Source("fair_unlock_fast"))
	var request atomic.Int64
	for _, mode := range []wire.Mode{wire.Write, wire.Read} {
		for _, how := range []string{"evalsha", "fcall"} {
			b.Run(fmt.Sprintf("mode=%s/call=%s", map[wire.Mode]string{wire.Write: "write", wire.Read: "read"}[mode], how), func(b *testing.B) {
				e.checkLeftovers(b)
				rdb, err := rueidis.NewClient(e.option(0, true))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(rdb.Close)
				run := func(fn string, s *rueidis.Lua, keys, args []string) rueidis.RedisResult {
					if how == "fcall" {
						return rdb.Do(ctx, rdb.B().Fcall().Function(lib+"_"+fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
					}
					return s.Exec(ctx, rdb, keys, args)
				}
				calls := make([]wire.FairCall, uncontendedGoroutines)
				for g := range calls {
					name := e.name("fcall", how, g)
					calls[g] = wire.FairCall{Name: name, Keys: wire.Fair(name), Policy: "writer-preferring", Mode: mode,
						Owner: "0d6f3a52-8c1e-4b7a-9f2d-5e4c3b2a1f0e:" + strconv.Itoa(g), Lease: 30 * time.Second,
						Queue: 30 * time.Second, Window: 1500 * time.Millisecond, Publish: "publish"}
				}
				runServerCost(b, e, uncontendedGoroutines, func(g int) error {
					c := calls[g]
					c.Stamp = time.Now()
					acq := wire.FairAcquire{FairCall: c, Wait: true}
					keys, args := acq.Render()
					if _, err := run("fair_acquire", acquire, keys, args).AsInt64(); err != nil {
						return fmt.Errorf("acquire (not the fast path's bare token?): %w", err)
					}
					rel := wire.FairUnlockFast{Name: c.Name, Keys: c.Keys, Mode: mode, Owner: c.Owner,
						Request: strconv.FormatInt(request.Add(1), 10), LatchTTL: 5 * time.Second}
					keys, args = rel.Render()
					if n, err := run("fair_unlock_fast", release, keys, args).AsInt64(); err != nil || n != 1 {
						return fmt.Errorf("fast release: %d, %w", n, err)
					}
					return rdb.Do(ctx, rdb.B().Del().Key(keys[2]).Build()).Error()
				})
			})
		}
	}
}
