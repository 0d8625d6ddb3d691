package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/leasewatch"
)

// renewalLeaseTime makes the watchdog renew every 333ms.
const renewalLeaseTime = time.Second

// BenchmarkRenewal: one Client holds N watchdog leases on distinct names and
// its watchdog renews them. One op is one renewal round, seen through the
// public Lease.Deadline (there is no hook into the renewer), so ns/op is
// about the renewal interval (333ms); the metrics are what matter. Use a
// small -benchtime such as 20x.
func BenchmarkRenewal(b *testing.B) {
	e := newEnv(b)
	for _, n := range []int{1000, 10000} {
		for _, tr := range transports {
			b.Run(fmt.Sprintf("leases=%d/transport=%s", n, tr.name), func(b *testing.B) {
				benchRenewal(b, e, tr, n)
			})
		}
	}
}

func benchRenewal(b *testing.B, e *env, tr transport, n int) {
	e.checkLeftovers(b)
	c := newClient(b, e.option(0, tr.disableCache), fairrw.WithLeaseTime(renewalLeaseTime))
	ctx := context.Background()

	leases := make([]*fairrw.Lease, n)
	const acquirers = 64
	errs := make(chan error, acquirers)
	for g := range acquirers {
		go func() {
			for i := g; i < n; i += acquirers {
				l, err := c.RWMutex(e.name("renewal", tr.name, n, i)).Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				leases[i] = l
			}
			errs <- nil
		}()
	}
	for range acquirers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { // before Close (cleanups run last in first out)
		for _, l := range leases {
			if l != nil && l.Err() == nil {
				_ = l.Unlock(ctx)
			}
		}
	})

	// Line up with the watchdog: start right after a round.
	sentinel := leases[0]
	last, err := leasewatch.NextRound(sentinel, sentinel.Deadline(), renewalLeaseTime)
	if err != nil {
		b.Fatal(err)
	}
	before, err := commandStats(ctx, e.raw)
	if err != nil {
		b.Fatal(err)
	}
	var lag time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		deadline, err := leasewatch.NextRound(sentinel, last, renewalLeaseTime)
		if err != nil {
			b.Fatal(err)
		}
		// The round was sent at deadline - lease time; the sentinel's
		// deadline moves when the whole round's replies have come back.
		lag += time.Since(deadline.Add(-renewalLeaseTime))
		last = deadline
	}
	b.StopTimer()
	after, err := commandStats(ctx, e.raw)
	if err != nil {
		b.Fatal(err)
	}

	lost := 0
	for _, l := range leases {
		select {
		case <-l.Done():
			lost++
		default:
		}
	}
	b.ReportMetric(micros(lag)/float64(b.N), "round-µs")
	b.ReportMetric(float64(after["evalsha"].Usec-before["evalsha"].Usec)/float64(b.N), "server-µs/round")
	b.ReportMetric(float64(lost), "lost-leases")
	if lost > 0 {
		b.Logf("%d of %d leases lost, e.g.: %v", lost, n, firstErr(leases))
	}
}

func firstErr(leases []*fairrw.Lease) error {
	for _, l := range leases {
		if err := l.Err(); err != nil {
			return err
		}
	}
	return nil
}
