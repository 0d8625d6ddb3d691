package acl

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestSentinelACL: docs/acl.md's lines for Sentinel: each policy's tenant
// lines and the sentinel-data block on the primary and its replica (ACL
// users are per server), and the sentinel block on the sentinel, whose user
// the Clients give in SentinelOption. Under every policy and the Mutex,
// checkTenantLocks holds through the sentinel.
func TestSentinelACL(t *testing.T) {
	s := redistest.StartSentinel(t)
	admin := func(addr string) func(args ...string) error {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return func(args ...string) error {
			return c.Do(context.Background(), c.B().Arbitrary(args...).Build()).Error()
		}
	}
	data := []func(args ...string) error{admin(s.Primary.Addr), admin(s.Replica.Addr)}
	sentinelPW := itest.AclPassword()
	sentinel := admin(s.Addr)
	itest.SetUserBy(t, sentinel, "billing", "", sentinelPW, nil, "sentinel")
	// Only the documented user may talk to the sentinel from now on (the
	// admin connection stays authenticated as it was).
	if err := sentinel("ACL", "SETUSER", "default", "off"); err != nil {
		t.Fatal(err)
	}
	for _, tg := range aclTargets {
		t.Run(tg.role, func(t *testing.T) {
			pw := map[string]string{"billing": itest.AclPassword(), "shipping": itest.AclPassword()}
			for _, ns := range []string{"billing", "shipping"} {
				for _, send := range data {
					setTenantBy(t, send, ns, ns+"-"+tg.role, pw[ns], tg.role, "sentinel-data")
				}
			}
			newClient := func(ns string, withNS bool) *fairrw.Client {
				opt := s.ClientOption()
				opt.Username, opt.Password = ns+"-"+tg.role, pw[ns]
				opt.Sentinel.Username, opt.Sentinel.Password = "locks-sentinel", sentinelPW
				return aclTopologyClient(t, opt, tg, ns, withNS)
			}
			checkTenantLocks(t, tg, newClient, pw["billing"], pw["shipping"], sentinelPW)
		})
	}
}
