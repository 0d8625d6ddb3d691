package conformance

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
)

func TestConformance(t *testing.T) {
	dur := itest.ConfDefaultDur
	if v := os.Getenv("FAIRRW_CONFORMANCE_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("FAIRRW_CONFORMANCE_DURATION=%q: want a positive Go duration such as 5m", v)
		}
		dur = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FAIRRW_CONFORMANCE_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FAIRRW_CONFORMANCE_SEED=%q: want an unsigned integer", v)
		}
		seed = s
	}
	t.Logf("conformance: seed %d (FAIRRW_CONFORMANCE_SEED=%d reproduces it), %v of workload per subtest", seed, seed, dur)
	quorumPolicy := itest.Policies[seed%uint64(len(itest.Policies))]
	targets := []itest.ConfTarget{
		{Name: "redisson", Kind: itest.ConfRWKind, Policy: fairrw.Redisson(), Replica: true, Tenant: nil},
		{Name: "writer-preferring", Kind: itest.ConfRWKind, Policy: fairrw.WriterPreferring(), Replica: true, Tenant: nil},
		{Name: "phase-fair", Kind: itest.ConfRWKind, Policy: fairrw.PhaseFair(), Replica: true, Tenant: nil},
		{Name: "mutex", Kind: itest.ConfMutexKind, Policy: fairrw.WriterPreferring(), Replica: false, Tenant: nil},
		{Name: "quorum-" + quorumPolicy.String(), Kind: itest.ConfQuorumKind, Policy: quorumPolicy, Replica: false, Tenant: nil},
	}
	for i, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			// The subtests run side by side: the workload mostly waits
			// (leases, holds, faults), and each has its own servers.
			t.Parallel()
			itest.RunConformance(t, tg, seed, seed+uint64(i)*0x9e3779b97f4a7c15, dur)
		})
	}
}
