package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

const (
	contendedClients    = 4
	contendedGoroutines = 8 // per Client
	// contendedTimeout bounds one Lock: longer than the default 30s lease, so
	// that a waiter left to its PTTL timer is still granted, and shows up in
	// max-cycle-ms and timer-share rather than as a failure.
	contendedTimeout = 2 * time.Minute
)

// BenchmarkContended: 4 Clients x 8 goroutines, each goroutine its own
// handle, all on one lock name, looping Lock+Unlock (write). One op is one
// cycle.
func BenchmarkContended(b *testing.B) {
	e := newEnv(b)
	for _, tr := range transports {
		b.Run(fmt.Sprintf("transport=%s/clients=%d/goroutines=%d", tr.name, contendedClients, contendedGoroutines), func(b *testing.B) {
			benchContended(b, e, tr)
		})
	}
}

func benchContended(b *testing.B, e *env, tr transport) {
	e.checkLeftovers(b)
	opt := e.option(0, tr.disableCache)
	name := e.name("contended", tr.name)
	ctx := context.Background()
	total := contendedClients * contendedGoroutines
	mus := make([]*fairrw.RWMutex, total)
	for i := range contendedClients {
		c := newClient(b, opt)
		for j := range contendedGoroutines {
			mus[i*contendedGoroutines+j] = c.RWMutex(name)
		}
		warmUp(b, mus[i*contendedGoroutines])
	}

	var (
		mu      sync.Mutex
		paths   = make(wakePaths)
		sum     time.Duration
		longest time.Duration
	)
	b.ReportAllocs()
	server := e.sampleServer(b)
	spread(b, total, func(g int, next func() bool) error {
		local := make(wakePaths)
		var localSum, localMax time.Duration
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			for p, n := range local {
				paths[p] += n
			}
			sum += localSum
			longest = max(longest, localMax)
		}()
		for next() {
			start := time.Now()
			lctx, cancel := context.WithTimeout(ctx, contendedTimeout)
			l, err := mus[g].Lock(lctx)
			cancel()
			if err != nil {
				return err
			}
			local[hidden.WokenBy(l)]++
			if err := l.Unlock(ctx); err != nil {
				return err
			}
			d := time.Since(start)
			localSum += d
			localMax = max(localMax, d)
		}
		return nil
	})
	e.reportServer(b, server)
	reportRate(b, "cycles/s")
	b.ReportMetric(micros(sum)/float64(b.N), "mean-cycle-µs")
	b.ReportMetric(float64(longest)/float64(time.Millisecond), "max-cycle-ms")
	paths.report(b)
	if paths["timer"] > 0 {
		b.Logf("%d of %d acquires were woken by the PTTL timer (%v); longest cycle %v", paths["timer"], b.N, paths, longest)
	}
}
