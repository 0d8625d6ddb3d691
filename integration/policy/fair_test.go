package policy

import (
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestDeadWaitingWriterExpires: a writer that queued and then died (it never
// refreshes or withdraws its entry) turns new readers away for no longer
// than its entry's lease; then they get in without any notification.
func TestDeadWaitingWriterExpires(t *testing.T) {
	for _, p := range []struct {
		policy fairrw.Policy
		code   string
	}{
		{fairrw.WriterPreferring(), "writer-preferring"}, {fairrw.PhaseFair(), "phase-fair"},
	} {
		t.Run(p.policy.String(), func(t *testing.T) {
			e := itest.NewWireEnv(t)
			n := "fair:dead-writer:" + p.code
			c := itest.NewClient(t, e.R, itest.Transports[1], fairrw.WithPolicy(p.policy))
			r := itest.MustLock(t, c.RWMutex(n), fairrw.Read)
			// The dead writer's one attempt, made with the script itself: it
			// queues with a 700ms entry lease and is never heard of again.
			const entry = 700 * time.Millisecond
			fk := fwire.Fair(n)
			err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(lua.FairAcquire()).Numkeys(9).
				Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fwire.Fence(n), fk.Channel, n, fwire.OwnerMarker(n, "dead-client:1")).
				Arg(itest.Args([]string{fwire.PolicyRecord(p.code, fwire.Protocol), "w", "dead-client:1", "30000", "700"}, itest.Stamped(), []string{"publish", "1", "0"})...).Build()).Error()
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := c.RWMutex(n).TryRLock(itest.TestCtx(t)); err == nil {
				t.Fatal("reader admitted while a writer waits")
			}
			l := itest.MustLock(t, c.RWMutex(n), fairrw.Read)
			if waited := time.Since(start); waited < entry/2 {
				t.Fatalf("reader admitted after %v, before the dead writer's entry (%v) expired", waited, entry)
			}
			itest.MustUnlock(t, l)
			itest.MustUnlock(t, r)
		})
	}
}

// TestFairWire: the fair policies keep their state apart from Redisson's
// hash and from each other's, under keys that carry the name's length, and
// delete it all when the lock is idle, but the last fencing token, which
// expires on its own.
func TestFairWire(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "fair:wire"
	c := itest.NewClient(t, e.R, itest.Transports[0], fairrw.WithPolicy(fairrw.PhaseFair()))
	fk := fwire.Fair(n)
	const base = "fairrw:9:{fair:wire}"
	if fk.State != base || fk.Readers != base+":readers" || fk.Queue != base+":queue" || fk.Waiting != base+":waiting" ||
		fk.Admitted != base+":admitted" || fk.Channel != base+":wake" || fwire.Fence(n) != base+":fence" {
		t.Fatalf("keys %+v, fence %s; want them under %s", fk, fwire.Fence(n), base)
	}
	m := c.RWMutex(n)
	w := itest.MustLock(t, m, fairrw.Write)
	token := strconv.FormatUint(w.Token(), 10)
	state := e.W.Hash(fk.State)
	if state["policy"] != fwire.PolicyRecord("phase-fair", fwire.Protocol) || state["writer"] != w.Owner() || state["wcount"] != "1" || state["wtoken"] != token {
		t.Fatalf("state %v, want policy phase-fair, writer %s, wcount 1, wtoken %s", state, w.Owner(), token)
	}
	e.W.WantMissing(n) // Redisson's hash: untouched
	if e.W.Pttl(fk.State) <= 0 {
		t.Fatalf("state has no TTL")
	}
	if v, ok := e.W.Get(fwire.Fence(n)); ok && (v != token || e.W.Pttl(fwire.Fence(n)) <= 0 && e.W.Pttl(fwire.Fence(n)) != -2*time.Millisecond) {
		t.Fatalf("fence = %q (PTTL %v), want %s with a TTL", v, e.W.Pttl(fwire.Fence(n)), token)
	}
	itest.MustUnlock(t, w)
	e.W.WantMissing(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted)
	e.W.EventuallyNoneLike(n)
}
