// Package locktest is the behavioural suite every fairrw policy and every
// transport must pass: exclusion (also between goroutines sharing a handle),
// sharing, explicit reentrancy and downgrade (further holds taken from a
// Lease), refused upgrade, leases (no hold shortens another), expiry, loss,
// cancellation and Close. The fairrw unit
// tests run it on miniredis; the integration tests on real Redis servers.
package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
)

// Env is where a suite runs.
type Env struct {
	// New returns a Client on the environment's Redis with opts added, closed
	// at the end of the test.
	New func(t testing.TB, opts ...fairrw.Option) *fairrw.Client
	// Raw is a plain client on the same Redis, to look at and damage state.
	Raw rueidis.Client
	// Policy is added to every Client the suite makes.
	Policy fairrw.Policy
	// Keys, when set, lists every key stored (a cluster keeps them on
	// several nodes); otherwise KEYS * runs on Raw.
	Keys func(t testing.TB) []string
	// Repeat marks an Env that repeats another Env's deployment and policy
	// over another transport. Run then leaves out the scenarios that check
	// only what Redis keeps for each hold (ShorterHoldNeverShortens,
	// FurtherHoldsEach): they wait out leases (about 20 s a run) and the
	// transport changes nothing they check, so they run once per policy
	// and deployment, on the Env without Repeat.
	Repeat bool
}

func (e Env) client(t testing.TB, opts ...fairrw.Option) *fairrw.Client {
	return e.New(t, append([]fairrw.Option{fairrw.WithPolicy(e.Policy)}, opts...)...)
}

// Run runs every scenario as a subtest.
func Run(t *testing.T, env Env) {
	scenarios := []scenario{
		{"ReadersShare", ReadersShare},
		{"WriteExcludes", WriteExcludes},
		{"ReentrantWrite", ReentrantWrite},
		{"ReentrantRead", ReentrantRead},
		{"Downgrade", Downgrade},
		{"NoUpgrade", NoUpgrade},
		{"UnlockTwice", UnlockTwice},
		{"WriterWaitsForWriter", WriterWaitsForWriter},
		{"ReadersWakeTogether", ReadersWakeTogether},
		{"CancelledWaitLeavesNothing", CancelledWaitLeavesNothing},
		{"CancelStormLeavesNothing", CancelStormLeavesNothing},
		{"UnlockIgnoresCancelledContext", UnlockIgnoresCancelledContext},
		{"ExplicitLeaseExpires", ExplicitLeaseExpires},
		{"QueuedWriteLeavesNothing", QueuedWriteLeavesNothing},
		{"WatchdogKeepsLeaseAlive", WatchdogKeepsLeaseAlive},
		{"LostLeaseIsReported", LostLeaseIsReported},
		{"DeadClientFreesLock", DeadClientFreesLock},
		{"UnlockAfterExpiry", UnlockAfterExpiry},
		{"CloseWakesWaiters", CloseWakesWaiters},
		{"InvalidInputChangesNothing", InvalidInputChangesNothing},
		{"Hammer", Hammer},
		{"SharedHandleExcludes", SharedHandleExcludes},
		{"FencingTokens", FencingTokens},
	}
	if !env.Repeat {
		scenarios = append(scenarios,
			scenario{"ShorterHoldNeverShortens", ShorterHoldNeverShortens},
			scenario{"FurtherHoldsEach", FurtherHoldsEach})
	}
	runScenarios(t, env, scenarios)
}

// ctx returns a context that ends with the test, bounded so that a broken
// lock fails the test instead of hanging it.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// name returns a lock name unique to the test.
func name(t testing.TB) string { return "locktest:" + t.Name() }
