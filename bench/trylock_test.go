package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
)

// BenchmarkTryLock: failed TryLock / TryRLock calls on a lock that another
// Client holds for writing. One op is one failed attempt (one script call).
func BenchmarkTryLock(b *testing.B) {
	e := newEnv(b)
	for _, tr := range transports {
		for _, op := range []string{"trylock", "tryrlock"} {
			for _, goroutines := range []int{1, 64} {
				b.Run(fmt.Sprintf("transport=%s/op=%s/goroutines=%d", tr.name, op, goroutines), func(b *testing.B) {
					benchTryLock(b, e, tr, op, goroutines)
				})
			}
		}
	}
}

func benchTryLock(b *testing.B, e *env, tr transport, op string, goroutines int) {
	e.checkLeftovers(b)
	opt := e.option(0, tr.disableCache)
	holder := newClient(b, opt)
	tryer := newClient(b, opt)
	name := e.name("trylock", tr.name, op, goroutines)
	ctx := context.Background()

	hl, err := holder.RWMutex(name).Lock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := hl.Unlock(ctx); err != nil {
			b.Errorf("holder unlock: %v", err)
		}
	})
	mus := make([]*fairrw.RWMutex, goroutines)
	try := func(g int) error {
		var l *fairrw.Lease
		var err error
		if op == "tryrlock" {
			l, err = mus[g].TryRLock(ctx)
		} else {
			l, err = mus[g].TryLock(ctx)
		}
		switch {
		case errors.Is(err, fairrw.ErrNotAcquired):
			return nil
		case err != nil:
			return err
		default:
			_ = l.Unlock(ctx)
			return fmt.Errorf("%s granted %q while another Client holds the write", op, name)
		}
	}
	for g := range mus {
		mus[g] = tryer.RWMutex(name)
		if err := try(g); err != nil { // loads the scripts, opens the connections
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	server := e.sampleServer(b)
	spread(b, goroutines, func(g int, next func() bool) error {
		for next() {
			if err := try(g); err != nil {
				return err
			}
		}
		return nil
	})
	e.reportServer(b, server)
	reportRate(b, "attempts/s")
}
