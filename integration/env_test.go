package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/locktest"
	"github.com/fairrw/rwlock/internal/redistest"
)

// A transport is one way a Client may talk to Redis. Every behaviour must
// hold on each: with client tracking (invalidations wake waiters), RESP3
// without tracking (managed Redis), and RESP2.
type transport struct {
	name   string
	mutate func(*rueidis.ClientOption)
}

var transports = []transport{
	{"resp3-tracking", func(*rueidis.ClientOption) {}},
	{"resp3-no-tracking", func(o *rueidis.ClientOption) { o.DisableCache = true }},
	{"resp2", func(o *rueidis.ClientOption) { o.DisableCache = true; o.AlwaysRESP2 = true }},
}

// longRun says whether FAIRRW_LONG=1 asks for the long runs: the cluster
// and Sentinel behaviour suites over every transport for every policy
// rather than one transport per policy. Everything else runs the same.
func longRun() bool { return os.Getenv("FAIRRW_LONG") == "1" }

// topologyMatrix is the policy and transport pairs the behaviour suites
// run on a cluster and under Sentinel: every pair in a long run; otherwise
// each policy on one transport, a different one each, so that every policy
// and every transport still meets the topology (a single node runs every
// pair always, see TestBehaviour).
func topologyMatrix() []struct {
	p  fairrw.Policy
	tr transport
} {
	var out []struct {
		p  fairrw.Policy
		tr transport
	}
	for i, p := range policies {
		for j, tr := range transports {
			if longRun() || j == i%len(transports) {
				out = append(out, struct {
					p  fairrw.Policy
					tr transport
				}{p, tr})
			}
		}
	}
	return out
}

// newEnv returns the behavioural suite's environment on r over tr.
func newEnv(t *testing.T, r *redistest.Redis, tr transport, policy fairrw.Policy) locktest.Env {
	return locktest.Env{
		Raw:    r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true }),
		Policy: policy,
		New: func(t testing.TB, opts ...fairrw.Option) *fairrw.Client {
			return newClient(t, r, tr, opts...)
		},
	}
}

func newClient(t testing.TB, r *redistest.Redis, tr transport, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return newClientOn(t, r.ClientOption(), tr, opts...)
}

// newClientOn returns a Client built from base (one server, a cluster's
// seeds, a sentinel) over tr, closed at cleanup.
func newClientOn(t testing.TB, base rueidis.ClientOption, tr transport, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	opt := base
	tr.mutate(&opt)
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
