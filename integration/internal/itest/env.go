package itest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// A transport is one way a Client may talk to Redis. Every behaviour must
// hold on each: with client tracking (invalidations wake waiters), RESP3
// without tracking (managed Redis), and RESP2.
type Transport struct {
	Name   string
	Mutate func(*rueidis.ClientOption)
}

var Transports = []Transport{
	{"resp3-tracking", func(*rueidis.ClientOption) {}},
	{"resp3-no-tracking", func(o *rueidis.ClientOption) { o.DisableCache = true }},
	{"resp2", func(o *rueidis.ClientOption) { o.DisableCache = true; o.AlwaysRESP2 = true }},
}

// longRun says whether FAIRRW_LONG=1 asks for the long runs: the cluster
// and Sentinel behaviour suites over every transport for every policy
// rather than one transport per policy. Everything else runs the same.
func LongRun() bool { return os.Getenv("FAIRRW_LONG") == "1" }

// topologyMatrix is the policy and transport pairs the behaviour suites
// run on a cluster and under Sentinel: every pair in a long run; otherwise
// each policy on one transport, a different one each, so that every policy
// and every transport still meets the topology (a single node runs every
// pair always, see TestBehaviour).
func TopologyMatrix() []struct {
	P  fairrw.Policy
	Tr Transport
} {
	var out []struct {
		P  fairrw.Policy
		Tr Transport
	}
	for i, p := range Policies {
		for j, tr := range Transports {
			if LongRun() || j == i%len(Transports) {
				out = append(out, struct {
					P  fairrw.Policy
					Tr Transport
				}{p, tr})
			}
		}
	}
	return out
}

// newEnv returns the behavioural suite's environment on r over tr.
func NewEnv(t *testing.T, r *redistest.Redis, tr Transport, policy fairrw.Policy) locktest.Env {
	return locktest.Env{
		Raw:    r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true }),
		Policy: policy,
		New: func(t testing.TB, opts ...fairrw.Option) *fairrw.Client {
			return NewClient(t, r, tr, opts...)
		},
	}
}

func NewClient(t testing.TB, r *redistest.Redis, tr Transport, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return NewClientOn(t, r.ClientOption(), tr, opts...)
}

// newClientOn returns a Client built from base (one server, a cluster's
// seeds, a sentinel) over tr, closed at cleanup.
func NewClientOn(t testing.TB, base rueidis.ClientOption, tr Transport, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	opt := base
	tr.Mutate(&opt)
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
