package fairrw

import (
	"context"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestReleaseBesideARenewalKeepsTheRenewedHold: a release that writes back
// what its owner's other Leases hold runs beside the watchdog, which does
// not take the owner's lock. Here a renewal of the owner's watchdog Lease
// reaches Redis, the owner releases a further hold while the renewal's
// answer is on its way, and then the answer moves the Lease's Deadline.
// Redis must keep the hold past that Deadline (and the lease margin):
// the release's write-back must not set the hold back to the deadline the
// Lease had before the renewal (the conformance test's redis/kept-short).
// Every policy and both modes of the watchdog Lease, and a release written
// again in the background (RWMutex.restate) as well.
func TestReleaseBesideARenewalKeepsTheRenewedHold(t *testing.T) {
	// A redis-server: miniredis counts a TTL down from its own clock
	// reading, which a loaded machine takes late, and the check here is to
	// the millisecond.
	opt := redistest.Start(t).ClientOption()
	type kind struct {
		name   string
		policy Policy
		mode   Mode // of the watchdog Lease, and its further hold
		lock   func(c *Client, name string) (*Lease, error)
	}
	ctx := context.Background()
	var kinds []kind
	for _, p := range []Policy{Redisson(), WriterPreferring(), PhaseFair()} {
		for _, mode := range []Mode{Write, Read} {
			kinds = append(kinds, kind{p.String() + "/" + mode.String(), p, mode, func(c *Client, name string) (*Lease, error) {
				if mode == Read {
					return c.RWMutex(name).RLock(ctx)
				}
				return c.RWMutex(name).Lock(ctx)
			}})
		}
	}
	kinds = append(kinds, kind{"mutex", Redisson(), Write, func(c *Client, name string) (*Lease, error) {
		return c.Mutex(name).Lock(ctx)
	}})
	for _, k := range kinds {
		for _, how := range []string{"unlock", "restate"} {
			t.Run(k.name+"/"+how, func(t *testing.T) {
				c, err := New(WithClientOption(opt), WithPolicy(k.policy))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				name := "renewed-beside-release:" + k.name + ":" + how
				wd, err := k.lock(c, name)
				if err != nil {
					t.Fatal(err)
				}
				inner, err := wd.further(ctx, k.mode, []AcquireOption{WithLease(20 * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				// The watchdog Lease was last confirmed a while ago: it has
				// 2 s left of the lease time (30 s), as between rounds.
				wd.mu.Lock()
				wd.deadline = time.Now().Add(2 * time.Second)
				wd.mu.Unlock()
				// A renewal round reaches Redis; its answer is not read yet.
				r := c.leaseRenewer()
				sent := time.Now()
				calls, _ := r.batches([]*renewHold{{m: wd.m, owner: wd.own.id, mode: wd.mode, leases: []*Lease{wd}}})
				for _, res := range script.Batch(ctx, c.redis(), calls) {
					if err := res.Error(); err != nil {
						t.Fatal(err)
					}
				}
				switch how {
				case "unlock":
					if err := inner.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
				case "restate":
					// The further hold's outcome was never learned: its owner
					// writes back what its Leases hold (inner is not one).
					inner.mu.Lock()
					inner.state = leaseEnded
					inner.mu.Unlock()
					o := wd.own
					if err := o.lock(ctx); err != nil {
						t.Fatal(err)
					}
					wd.m.restate(o, k.mode, 20*time.Second, time.Time{})
					o.unlock()
				}
				wd.confirm(sent.Add(c.settings().leaseTime)) // the renewal's answer
				info, err := c.Inspect(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range info.Holders {
					if h.Owner != wd.Owner() || h.Mode != k.mode {
						continue
					}
					end := info.Time.Add(h.Remaining)
					if short := wd.Deadline().Add(leaseMargin - 2*time.Millisecond).Sub(end); short > 0 {
						t.Fatalf("Redis keeps the hold until %v, %v short of the renewed Deadline + LeaseMargin", end, short)
					}
					if err := wd.Unlock(ctx); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Fatalf("no %s holder %s in %+v", k.mode, wd.Owner(), info.Holders)
			})
		}
	}
}
