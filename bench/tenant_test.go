package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/acldoc"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// BenchmarkTenantReads: what a tenant of a shared Redis gives up by going
// without client tracking (docs/acl.md, "Client tracking"). 8 goroutines
// of one Client, each its own handle, loop RLock+Unlock on one name under
// WriterPreferring, on a redis-server of the benchmark's own, as
//
//   - acl=none: the default user (no ACL patterns to check);
//   - acl=tenant: an ACL user of docs/acl.md's tenant and writer-preferring
//     blocks, namespace "billing";
//
// each with client tracking (acl=tenant adds the tracking block) and
// without (acl=none sets DisableCache; acl=tenant's Client finds tracking
// refused and connects without it). Without tracking, reads do not share
// a hold: every read is two script calls. acl=none against acl=tenant at
// the same tracking is what the ACL checks cost Redis.
func BenchmarkTenantReads(b *testing.B) {
	r := redistest.StartProcess(b)
	raw := r.Client(b, func(o *rueidis.ClientOption) { o.DisableCache = true })
	var id [6]byte
	_, _ = rand.Read(id[:])
	e := &env{r: r, raw: raw, run: hex.EncodeToString(id[:])}
	const password = "bench-tenant"
	for user, roles := range map[string][]string{
		"billing":         {"tenant", "writer-preferring"},
		"billing-tracked": {"tenant", "writer-preferring", "tracking"},
	} {
		cmds, err := acldoc.Commands("../docs/acl.md", "billing", user, password, roles...)
		if err != nil {
			b.Fatal(err)
		}
		for _, args := range cmds {
			if err := raw.Do(context.Background(), raw.B().Arbitrary(args...).Build()).Error(); err != nil {
				b.Fatalf("%v: %v", args[:3], err)
			}
		}
	}
	for _, acl := range []string{"none", "tenant"} {
		for _, tracking := range []bool{true, false} {
			b.Run(fmt.Sprintf("acl=%s/tracking=%v", acl, tracking), func(b *testing.B) {
				opt := e.option(0, acl == "none" && !tracking)
				if acl == "tenant" {
					opt.Username, opt.Password = "billing", password
					if tracking {
						opt.Username = "billing-tracked"
					}
				}
				benchTenantReads(b, e, opt)
			})
		}
	}
}

func benchTenantReads(b *testing.B, e *env, opt rueidis.ClientOption) {
	e.checkLeftovers(b)
	const goroutines = 8
	name := "billing:" + e.name("tenant-reads")
	c := newClient(b, opt, fairrw.WithPolicy(fairrw.WriterPreferring()), fairrw.WithNamespace("billing"))
	mus := make([]*fairrw.RWMutex, goroutines)
	for i := range mus {
		mus[i] = c.RWMutex(name)
	}
	warmUp(b, mus[0])
	ctx := context.Background()
	b.ReportAllocs()
	server := e.sampleServer(b)
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
	reportRate(b, "reads/s")
}
