package fairrw_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// miniEnv is the behavioural suite's environment on an in-process miniredis:
// RESP2, no client tracking, so waiters are woken by pub/sub and the PTTL.
func miniEnv(t *testing.T, policy fairrw.Policy) locktest.Env {
	_, opt := redistest.Miniredis(t)
	raw, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	return locktest.Env{
		Raw:    raw,
		Policy: policy,
		New: func(t testing.TB, opts ...fairrw.Option) *fairrw.Client {
			c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
	}
}

// TestBehaviour runs the behavioural suite for every policy, the policies
// side by side (each on its own in-process server): the suite mostly waits
// for leases to run out.
func TestBehaviour(t *testing.T) {
	t.Parallel()
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			locktest.Run(t, miniEnv(t, p))
		})
	}
}

func TestOrdering(t *testing.T) {
	t.Parallel()
	t.Run("writer-preferring", func(t *testing.T) {
		t.Parallel()
		locktest.RunWriterPreferring(t, miniEnv(t, nil))
	})
	t.Run("phase-fair", func(t *testing.T) {
		t.Parallel()
		locktest.RunPhaseFair(t, miniEnv(t, nil))
	})
}

func TestPolicyMismatch(t *testing.T) {
	locktest.PolicyMismatch(t, miniEnv(t, nil))
}

// TestMutex runs the Mutex suite beside each policy's read-write lock (the
// policy it must refuse to share a name with).
func TestMutex(t *testing.T) {
	t.Parallel()
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			locktest.RunMutex(t, miniEnv(t, p))
		})
	}
}
