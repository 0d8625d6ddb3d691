package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
)

// The calls BenchmarkServerCost measures besides fairrw's own and the
// baseline pairs (among them baseline.FastPathFloor: the fast path's
// commands with none of its logic). fairPrelude is the text every full fair
// script opens with (common.lua and fair_lib.lua: one TIME and the
// definitions of its helpers) with nothing after it: the fixed cost of a
// fair script past its fast path, before its operation begins.
var (
	trivialScript = rueidis.NewLuaScript("return 1")
	fairPrelude   = rueidis.NewLuaScript(lua.Compose("common", "fair_lib") + "return 1")
)

// BenchmarkServerCost measures what bounds the lock's throughput on the
// server: Redis CPU per call and the calls per second it could serve with
// a whole core, for the calls a lock is made of. 64 goroutines, each on its
// own key or lock name (no contention), share one rueidis client (or one
// fairrw Client) with MaxFlushDelay 0, as BenchmarkUncontended. One op:
//
//   - call=evalsha-return1: one EVALSHA of "return 1" (the cost of running
//     any script at all);
//   - call=lua-pair, call=evalsha-pair and call=fast-path-floor: the bare
//     lock/unlock pairs of BenchmarkUncontended's baselines
//     (bench/internal/baseline): an EVALSHA of HGET/HSET/PEXPIRE and one of
//     HEXISTS/DEL/PUBLISH (Redisson's shape, the reference of fairbench's
//     server-cost ratios), an EVALSHA of a SET and one of a DEL, and the fair
//     fast path's commands, keys and values without its logic;
//   - call=setnx-del: a barging lock's grant and release as plain commands,
//     SET NX PX and DEL (the peers);
//   - call=fair-prelude: one EVALSHA of the text every fair script opens
//     with, returning before any operation;
//   - policy=writer-preferring and policy=phase-fair: fairrw's uncontended
//     write Lock+Unlock (fair_acquire, fair_unlock, the janitor's DEL);
//   - read/policy=...: the same with RLock+Unlock;
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
	for _, p := range baseline.Pairs() {
		b.Run("call="+p.Name, func(b *testing.B) {
			rdb := raw(b)
			keys := make([][]string, uncontendedGoroutines)
			for g := range keys {
				keys[g] = p.Keys(e.name("pair", p.Name, g))
			}
			runServerCost(b, e, uncontendedGoroutines, func(g int) error {
				return p.Cycle(ctx, rdb, keys[g])
			})
		})
	}
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
	// The same with a read lock: RLock+Unlock, each goroutine on its own name.
	for _, p := range policies {
		b.Run("read/policy="+p.name, func(b *testing.B) {
			e.checkLeftovers(b)
			c := newClient(b, e.option(0, true), fairrw.WithPolicy(p.policy))
			mus := make([]*fairrw.RWMutex, uncontendedGoroutines)
			for g := range mus {
				mus[g] = c.RWMutex(e.name("servercost-read", p.name, g))
			}
			runServerCost(b, e, uncontendedGoroutines, func(g int) error {
				l, err := mus[g].RLock(ctx)
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
// scripts' KEYS (fair_lib.lua): the prelude script reads them
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
