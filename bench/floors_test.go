package bench

import (
	"fmt"
	"testing"

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
