package behaviour

import (
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/container"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestBehaviour runs the behavioural suite for every policy over every
// transport on a real redis-server.
//
// The policies run side by side on one server (a lock's keys are its own,
// and the suite mostly waits for leases to run out), each over the
// transports in turn.
func TestBehaviour(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			for _, tr := range itest.Transports {
				t.Run(tr.Name, func(t *testing.T) {
					env := itest.NewEnv(t, r, tr, p)
					env.Repeat = tr.Name != itest.Transports[0].Name
					locktest.Run(t, env)
				})
			}
		})
	}
}

// TestMutexBehaviour runs the Mutex suite over every transport on a real
// redis-server beside the Redisson policy, and over one transport beside
// each fair policy: a Mutex ignores the Client's policy, which only decides
// the read-write lock it must refuse to share a name with and the renewal
// script its holds share a watchdog round with.
func TestMutexBehaviour(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel() // as in TestBehaviour
			for i, tr := range itest.Transports {
				if i > 0 && p.String() != fairrw.Redisson().String() {
					continue
				}
				t.Run(tr.Name, func(t *testing.T) {
					locktest.RunMutex(t, itest.NewEnv(t, r, tr, p))
				})
			}
		})
	}
}

// TestBehaviourInContainer runs the suite once against Redis in a container
// started by testcontainers-go, so that path is exercised wherever a Docker
// engine answers (CI sets FAIRRW_REQUIRE_DOCKER=1 there).
func TestBehaviourInContainer(t *testing.T) {
	r := container.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel() // as in TestBehaviour
			locktest.Run(t, itest.NewEnv(t, r, itest.Transports[0], p))
		})
	}
}

// TestOrdering runs each fair policy's ordering tests over every transport.
func TestOrdering(t *testing.T) {
	r := redistest.Start(t)
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			t.Run("writer-preferring", func(t *testing.T) { locktest.RunWriterPreferring(t, itest.NewEnv(t, r, tr, nil)) })
			t.Run("phase-fair", func(t *testing.T) { locktest.RunPhaseFair(t, itest.NewEnv(t, r, tr, nil)) })
		})
	}
}

func TestPolicyMismatch(t *testing.T) {
	locktest.PolicyMismatch(t, itest.NewEnv(t, redistest.Start(t), itest.Transports[0], nil))
}
