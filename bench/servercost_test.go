package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/redisinfo"
	"github.com/fairrw/rwlock/lua"
)

// The calls BenchmarkServerCost measures besides fairrw's own. The "inlined"
// scripts run the same Redis commands as the fair policies' uncontended
// write acquire and release (fair_acquire, fair_unlock: the commands
// MONITOR shows for them) with none of their Lua: what is left of the fair
// scripts' cost over these is the Lua they run. fairPrelude is the text
// every fair script opens with (common.lua and fair_lib.lua: one TIME and
// the definitions of its helpers) with nothing after it: the fixed cost of
// a fair script before its operation begins.
var (
	trivialScript  = rueidis.NewLuaScript("return 1")
	inlinedAcquire = rueidis.NewLuaScript(`
local t = redis.call('time')
redis.call('hmget', KEYS[1], 'policy', 'writer', 'wcount', 'wdeadline', 'wtoken', 'turned', 'q:' .. ARGV[1], 'horizon')
redis.call('exists', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('set', KEYS[8], t[1] .. t[2], 'px', 1000, 'get')
local deadline = tonumber(t[1]) * 1000 + 30000
redis.call('hset', KEYS[1], 'policy', 'writer-preferring', 'horizon', deadline + 15000, 'writer', ARGV[1],
  'wcount', 1, 'wdeadline', deadline, 'wtoken', t[1] .. t[2])
redis.call('pexpireat', KEYS[1], deadline + 15000)
return {1, t[1] .. t[2]}`)
	inlinedUnlock = rueidis.NewLuaScript(`
redis.call('get', KEYS[6])
redis.call('time')
redis.call('hmget', KEYS[1], 'policy', 'writer', 'wcount', 'wdeadline', 'wtoken', 'turned', 'q:' .. ARGV[1], 'horizon')
redis.call('exists', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('del', KEYS[1])
redis.call('set', KEYS[6], 1, 'px', 5000)
return {1, '', 0}`)
	fairPrelude = rueidis.NewLuaScript(lua.Compose("common", "fair_lib") + "return 1")
)

// BenchmarkServerCost measures what bounds the lock's throughput on the
// server: Redis CPU per call and the calls per second it could serve with
// a whole core, for the calls a lock is made of. 64 goroutines, each on its
// own key or lock name (no contention), share one rueidis client (or one
// fairrw Client) with MaxFlushDelay 0, as BenchmarkUncontended. One op:
//
//   - call=evalsha-return1: one EVALSHA of "return 1" (the cost of running
//     any script at all);
//   - call=evalsha-pair: the bare lock/unlock pair of BenchmarkUncontended's
//     baseline, one EVALSHA of a SET and one of a DEL;
//   - call=setnx-del: a barging lock's grant and release as plain commands,
//     SET NX PX and DEL (the peers);
//   - call=fair-prelude: one EVALSHA of the text every fair script opens
//     with, returning before any operation;
//   - call=fair-inlined-pair: the fair write cycle's commands (see
//     inlinedAcquire, inlinedUnlock) in two scripts without their Lua, and
//     the DEL of the unlock latch that fairrw's janitor sends;
//   - policy=writer-preferring and policy=phase-fair: fairrw's uncontended
//     write Lock+Unlock (fair_acquire, fair_unlock, the janitor's DEL);
//   - contended/policy=...: 8 writers on 2 Clients (4 each) looping
//     Lock+Unlock on one name; one op is one grant (a refused queue attempt
//     and the release that grants), so ceiling-ops/s is the fair grants/s
//     Redis could serve on one core, to compare with call=setnx-del's for a
//     barging grant.
//
// Metrics per op: redis-cpu-µs/op (the redis-server process's CPU: command
// execution plus reading, parsing and replying), ceiling-ops/s (1e6 over it:
// the ops/s of Redis alone on one whole core), script-µs/op (INFO
// commandstats time of EVALSHA, which includes the commands its script
// ran), µs/script (the same per script call), cmd-µs/op (commandstats time
// of every other command: those scripts ran, and plain ones such as the
// janitor's DEL), lua-µs/op (script-µs/op minus cmd-µs/op: the time of the
// scripts' own Lua and of calling into Redis from it; the plain commands'
// time makes it a slight underestimate), scripts/op, cmds/op (commands
// scripts ran included) and cycles/s as measured on this machine, where the
// benchmark shares the CPUs with Redis.
func BenchmarkServerCost(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	raw := func(b *testing.B) rueidis.Client {
		e.checkLeftovers(b)
		rdb, err := rueidis.NewClient(e.option(0, true))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rdb.Close)
		return rdb
	}
	b.Run("call=evalsha-return1", func(b *testing.B) {
		rdb := raw(b)
		runServerCost(b, e, uncontendedGoroutines, func(g int) error {
			return trivialScript.Exec(ctx, rdb, []string{e.name("return1", g)}, nil).Error()
		})
	})
	b.Run("call=evalsha-pair", func(b *testing.B) {
		rdb := raw(b)
		runServerCost(b, e, uncontendedGoroutines, func(g int) error {
			k := []string{e.name("pair", g)}
			if err := baselineSet.Exec(ctx, rdb, k, []string{"1"}).Error(); err != nil {
				return err
			}
			return baselineDel.Exec(ctx, rdb, k, nil).Error()
		})
	})
	b.Run("call=setnx-del", func(b *testing.B) {
		rdb := raw(b)
		runServerCost(b, e, uncontendedGoroutines, func(g int) error {
			k := e.name("setnx", g)
			ok, err := rdb.Do(ctx, rdb.B().Set().Key(k).Value("token").Nx().PxMilliseconds(30000).Build()).AsBool()
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("SET NX refused on %s: it is not contended", k)
			}
			return rdb.Do(ctx, rdb.B().Del().Key(k).Build()).Error()
		})
	})
	b.Run("call=fair-prelude", func(b *testing.B) {
		rdb := raw(b)
		args := []string{"writer-preferring", "w", "owner", "30000", "30000", "0", "5000", "publish"}
		runServerCost(b, e, uncontendedGoroutines, func(g int) error {
			return fairPrelude.Exec(ctx, rdb, fairKeysOf(e.name("prelude", g)), args).Error()
		})
	})
	b.Run("call=fair-inlined-pair", func(b *testing.B) {
		rdb := raw(b)
		var request atomic.Int64
		runServerCost(b, e, uncontendedGoroutines, func(g int) error {
			k := fairKeysOf(e.name("inlined", g))
			latch := k[0] + ":latch:" + fmt.Sprint(request.Add(1))
			if err := inlinedAcquire.Exec(ctx, rdb, k[:8], []string{"owner"}).Error(); err != nil {
				return err
			}
			if err := inlinedUnlock.Exec(ctx, rdb, []string{k[0], k[1], k[2], k[3], k[4], latch}, []string{"owner"}).Error(); err != nil {
				return err
			}
			return rdb.Do(ctx, rdb.B().Del().Key(latch).Build()).Error()
		})
	})
	policies := []struct {
		name   string
		policy fairrw.Policy
	}{
		{"writer-preferring", fairrw.WriterPreferring()},
		{"phase-fair", fairrw.PhaseFair()},
	}
	for _, p := range policies {
		b.Run("policy="+p.name, func(b *testing.B) {
			e.checkLeftovers(b)
			c := newClient(b, e.option(0, true), fairrw.WithPolicy(p.policy))
			mus := make([]*fairrw.RWMutex, uncontendedGoroutines)
			for g := range mus {
				mus[g] = c.RWMutex(e.name("servercost", p.name, g))
			}
			runServerCost(b, e, uncontendedGoroutines, func(g int) error {
				l, err := mus[g].Lock(ctx)
				if err != nil {
					return err
				}
				return l.Unlock(ctx)
			})
		})
	}
	// One name, 8 writers on 2 Clients (fairbench's contended scenario):
	// one op is one grant, a queue attempt and a release that grants.
	for _, p := range policies {
		b.Run("contended/policy="+p.name, func(b *testing.B) {
			e.checkLeftovers(b)
			const clients, writers = 2, 4
			name := e.name("servercost-contended", p.name)
			mus := make([]*fairrw.RWMutex, clients*writers)
			for i := range clients {
				c := newClient(b, e.option(0, true), fairrw.WithPolicy(p.policy))
				for j := range writers {
					mus[i*writers+j] = c.RWMutex(name)
				}
			}
			runServerCost(b, e, len(mus), func(g int) error {
				l, err := mus[g].Lock(ctx)
				if err != nil {
					return err
				}
				return l.Unlock(ctx)
			})
		})
	}
}

// fairKeysOf returns nine keys of one slot in the order of the fair
// scripts' KEYS (fair_lib.lua): the inlined and prelude scripts read them
// as the fair scripts would.
func fairKeysOf(name string) []string {
	base := "{" + name + "}"
	return []string{base, base + ":readers", base + ":queue", base + ":waiting", base + ":admitted",
		base + ":fence", base + ":wake", base + ":x", base + ":marker"}
}

// runServerCost warms op up on every goroutine, then measures it as
// runCycles does (over the given number of goroutines) and adds the
// server's own figures per op.
func runServerCost(b *testing.B, e *env, goroutines int, op func(g int) error) {
	for g := range goroutines {
		if err := op(g); err != nil { // loads the scripts, opens the connections
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	before, err := commandStats(ctx, e.raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	server := e.sampleServer(b)
	spread(b, goroutines, func(g int, next func() bool) error {
		for next() {
			if err := op(g); err != nil {
				return err
			}
		}
		return nil
	})
	e.reportServer(b, server)
	reportRate(b, "cycles/s")
	cpu := e.sampleServer(b).cpu - server.cpu
	after, err := commandStats(ctx, e.raw)
	if err != nil {
		b.Fatal(err)
	}
	d := after.Sub(before)
	n := float64(b.N)
	if us := micros(cpu) / n; us > 0 {
		b.ReportMetric(1e6/us, "ceiling-ops/s")
	}
	var scripts, calls, inner int64
	for name, st := range d {
		switch {
		case name == "info":
		case isScriptCommand(name):
			scripts += st.Usec
			calls += st.Calls
		default:
			inner += st.Usec
		}
	}
	b.ReportMetric(float64(scripts)/n, "script-µs/op")
	b.ReportMetric(float64(inner)/n, "cmd-µs/op")
	if scripts > 0 {
		b.ReportMetric(float64(scripts-inner)/n, "lua-µs/op")
		b.ReportMetric(float64(scripts)/float64(calls), "µs/script")
	}
	b.ReportMetric(float64(d.Commands("info"))/n, "cmds/op")
}

// isScriptCommand says whether name runs a script (its commandstats time
// includes the commands the script ran).
func isScriptCommand(name string) bool {
	return redisinfo.Stats{name: {Calls: 1}}.Scripts() == 1
}
