package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
)

// BenchmarkReadShare: 8 goroutines of one Client, each its own handle, on
// one lock name, looping RLock+Unlock, under each fair policy, with shared
// reads (the default) and without (WithCohorts(false)). One op is one
// read hold; scripts/op is what the reads cost Redis in script calls, and
// queue-reads/op the tracked ZCARDs that tell a Client whether a writer
// waits.
func BenchmarkReadShare(b *testing.B) {
	e := newEnv(b)
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		for _, shared := range []bool{true, false} {
			b.Run(fmt.Sprintf("policy=%s/shared=%v", p, shared), func(b *testing.B) {
				benchReadShare(b, e, p, shared)
			})
		}
	}
}

func benchReadShare(b *testing.B, e *env, p fairrw.Policy, shared bool) {
	e.checkLeftovers(b)
	const goroutines = 8
	name := e.name("readshare", fmt.Sprintf("%s-%v", p, shared))
	c := newClient(b, e.option(0, false), fairrw.WithPolicy(p), fairrw.WithCohorts(shared))
	mus := make([]*fairrw.RWMutex, goroutines)
	for i := range mus {
		mus[i] = c.RWMutex(name)
	}
	warmUp(b, mus[0])
	ctx := context.Background()
	zcards := func() int64 {
		st, err := redisinfo.Read(ctx, e.raw)
		if err != nil {
			b.Fatal(err)
		}
		return st["zcard"].Calls
	}
	b.ReportAllocs()
	server := e.sampleServer(b)
	z0 := zcards()
	spread(b, goroutines, func(g int, next func() bool) error {
		for next() {
			l, err := mus[g].RLock(ctx)
			if err != nil {
				return err
			}
			if err := l.Unlock(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	e.reportServer(b, server)
	b.ReportMetric(float64(zcards()-z0)/float64(b.N), "queue-reads/op")
	reportRate(b, "reads/s")
}
