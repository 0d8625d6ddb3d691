package integration

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/lua"
)

// TestDeadWaitingWriterExpires: a writer that queued and then died (it never
// refreshes or withdraws its entry) turns new readers away for no longer
// than its entry's lease; then they get in without any notification.
func TestDeadWaitingWriterExpires(t *testing.T) {
	for _, p := range []struct {
		policy fairrw.Policy
		code   string
	}{
		{fairrw.WriterPreferring(), "wp"}, {fairrw.PhaseFair(), "pf"},
	} {
		t.Run(p.policy.String(), func(t *testing.T) {
			e := newWireEnv(t)
			n := "fair:dead-writer:" + p.code
			c := newClient(t, e.r, transports[1], fairrw.WithPolicy(p.policy))
			r := mustLock(t, c.RWMutex(n), fairrw.Read)
			// The dead writer's one attempt, made with the script itself: it
			// queues with a 700ms entry lease and is never heard of again.
			const entry = 700 * time.Millisecond
			fk := compat.Fair(n)
			err := e.raw.Do(testCtx(t), e.raw.B().Eval().Script(lua.Compose("fair_lib", "fair_acquire")).Numkeys(9).
				Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, compat.Fence(n), fk.Channel, n, compat.AttemptLatch(n, "dead")).
				Arg(p.code, "w", "dead-client:1", "30000", "700", "5000", "publish", "1").Build()).Error()
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := c.RWMutex(n).TryRLock(testCtx(t)); err == nil {
				t.Fatal("reader admitted while a writer waits")
			}
			l := mustLock(t, c.RWMutex(n), fairrw.Read)
			if waited := time.Since(start); waited < entry/2 {
				t.Fatalf("reader admitted after %v, before the dead writer's entry (%v) expired", waited, entry)
			}
			mustUnlock(t, l)
			mustUnlock(t, r)
		})
	}
}

// TestFairWire: the fair policies keep their state apart from Redisson's
// hash and from each other's, and delete it all when the lock is idle,
// except the fencing counter.
func TestFairWire(t *testing.T) {
	e := newWireEnv(t)
	const n = "fair:wire"
	c := newClient(t, e.r, transports[0], fairrw.WithPolicy(fairrw.PhaseFair()))
	m := c.RWMutex(n)
	w := mustLock(t, m, fairrw.Write)
	fk := compat.Fair(n)
	state := e.w.hash(fk.State)
	if state["policy"] != "pf" || state["writer"] != m.Owner() || state["wcount"] != "1" {
		t.Fatalf("state %v", state)
	}
	e.w.wantMissing(n) // Redisson's hash: untouched
	if e.w.pttl(fk.State) <= 0 {
		t.Fatalf("state has no TTL")
	}
	if v, _ := e.w.get(compat.Fence(n)); v != "1" || e.w.pttl(compat.Fence(n)) != -time.Millisecond {
		t.Fatalf("fence = %q (PTTL %v), want 1 with no TTL", v, e.w.pttl(compat.Fence(n)))
	}
	mustUnlock(t, w)
	e.w.wantMissing(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted)
	e.w.eventuallyNoneLike(n)
}
