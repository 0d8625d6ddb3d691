package bench

import (
	"context"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

func BenchmarkZZProbe(b *testing.B) {
	e := newEnv(b)
	for _, pc := range policyCases {
		for _, tr := range transports {
		for _, wm := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			b.Run(pc.name+"/"+tr.name+"/waiter="+wm.String(), func(b *testing.B) {
				e.checkLeftovers(b)
				opt := e.option(0, tr.disableCache)
				name := e.name("probe", pc.name, tr.name)
				a := newClient(b, opt, fairrw.WithPolicy(pc.policy))
				w := newClient(b, opt, fairrw.WithPolicy(pc.policy))
				warmUp(b, a.RWMutex(name))
				warmUp(b, w.RWMutex(name))
				ctx := context.Background()
				l, err := a.RWMutex(name).Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				before := e.sampleServer(b)
				done := make(chan *fairrw.Lease)
				go func() {
					l2, err := acquire(ctx, w.RWMutex(name), wm)
					if err != nil {
						b.Error(err)
					}
					done <- l2
				}()
				time.Sleep(time.Second)
				mid := e.sampleServer(b)
				_ = l.Unlock(ctx)
				l2 := <-done
				b.Logf("scripts during 1s hold with one waiter on another client: %d; woken by %q", mid.scripts-before.scripts, l2.WokenBy())
				_ = l2.Unlock(ctx)
			})
		}
		}
	}
}
