package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/bench/internal/contender"
)

// BenchmarkFloors measures the floors of the fair policies' uncontended
// cycle under each layout considered (bench/internal/baseline's Floors:
// commands only, no logic) beside the lua pair, the default policy and
// rueidislock, in one run on one redis-server: the loop of
// BenchmarkPeers' op=lockunlock-uncontended (64 goroutines, each its own
// name). Compare redis-cpu-µs/op within the run.
//
//	go test -run '^$' -bench BenchmarkFloors -benchtime 2s ./bench/
func BenchmarkFloors(b *testing.B) {
	e := newEnv(b)
	opt := e.option(0, false)
	pairs := append([]*baseline.Pair{baseline.LuaPair}, baseline.Floors()...)
	for _, p := range pairs {
		b.Run(fmt.Sprintf("baseline=%s", p.Name), func(b *testing.B) {
			benchBaselinePair(b, e, opt, p)
		})
	}
	for _, c := range contender.All() {
		if c.Name != "writer-preferring" && c.Name != "rueidislock" {
			continue
		}
		b.Run(fmt.Sprintf("contender=%s", c.Name), func(b *testing.B) {
			if err := c.Supports(opt, false); err != nil {
				b.Skip(err)
			}
			benchPeersUncontended(b, e, c, opt)
		})
	}
}

// BenchmarkScriptNaming measures what naming keys and values costs Redis:
// one EVALSHA of a script that returns 1 at once, sent with keys and
// values as long as fairrw's, by 64 goroutines (op: one script call). Its
// layouts are the fair fast path's (9 keys and 12 values, its unlock's 3
// and 3), those of the floors (bench/internal/baseline's Floors) and the
// lua pair's (2 and 2). redis-cpu-µs/op counts the whole call (reading,
// parsing, running, replying); evalsha-µs/op is INFO commandstats's time
// inside the command (KEYS and ARGV built, the script run).
//
//	go test -run '^$' -bench BenchmarkScriptNaming -benchtime 100000x ./bench/
func BenchmarkScriptNaming(b *testing.B) {
	e := newEnv(b)
	rdb := newRawClient(b, e)
	key := e.name("naming", "fairrw:64:{fairrw-bench:9b47174e75f1:peers-uncontended:writer-preferring:5}")
	const value = "c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17"
	for _, n := range [][2]int{{2, 2}, {3, 3}, {3, 7}, {5, 7}, {8, 7}, {9, 12}} {
		keys := make([]string, n[0])
		for i := range keys {
			keys[i] = key + ":" + strconv.Itoa(i)
		}
		args := make([]string, n[1])
		for i := range args {
			args[i] = value[:10+(3*i)%(len(value)-10)]
		}
		// A script of its own per layout: its cost is its own.
		s := rueidis.NewLuaScript(fmt.Sprintf("return 1 -- %d keys, %d values", n[0], n[1]))
		b.Run(fmt.Sprintf("keys=%d/values=%d", n[0], n[1]), func(b *testing.B) {
			ctx := context.Background()
			if err := s.Exec(ctx, rdb, keys, args).Error(); err != nil {
				b.Fatal(err)
			}
			before, err := commandStats(ctx, e.raw)
			if err != nil {
				b.Fatal(err)
			}
			server := e.sampleServer(b)
			spread(b, uncontendedGoroutines, func(g int, next func() bool) error {
				for next() {
					if err := s.Exec(ctx, rdb, keys, args).Error(); err != nil {
						return err
					}
				}
				return nil
			})
			e.reportServer(b, server)
			after, err := commandStats(ctx, e.raw)
			if err != nil {
				b.Fatal(err)
			}
			d := after.Sub(before)
			if c := d["evalsha"]; c.Calls > 0 {
				b.ReportMetric(float64(c.Usec)/float64(c.Calls), "evalsha-µs/op")
			}
		})
	}
}

// newRawClient returns a rueidis client of e's Redis with rueidis's
// defaults, closed by b's cleanup.
func newRawClient(b *testing.B, e *env) rueidis.Client {
	rdb, err := rueidis.NewClient(e.option(0, false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rdb.Close)
	return rdb
}
