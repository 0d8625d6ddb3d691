package faults

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestUnlockLatchMakesRetriesIdempotent: an unlock retried with the same
// request id (its first reply lost) answers as the first call did and
// releases one hold only.
func TestUnlockLatchMakesRetriesIdempotent(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "latch:unlock"
	m := e.Client(t).RWMutex(n)
	w1 := itest.MustLock(t, m, fairrw.Write)
	w2 := itest.MustFurther(t, w1, fairrw.Write)
	field := compat.WriteField(w1.Owner())
	const request = "00112233445566778899aabbccddeeff"
	for range 3 {
		// One of the owner's two write holds goes: one is left, 30s ahead.
		got, err := itest.RwUnlock(e, n, w1.Owner(), "w", request, 1, 30*time.Second).AsInt64()
		if err != nil || got != 0 {
			t.Fatalf("retried unlock = %d, %v; want 0 (still held) every time", got, err)
		}
	}
	e.W.WantHash(n, map[string]string{"mode": "write", field: "1"})
	if v, ok := e.W.Get(compat.UnlockLatch(n, request)); !ok || v != "0" {
		t.Fatalf("latch = %q, %v; want \"0\"", v, ok)
	}
	itest.MustUnlock(t, w2)
	itest.MustUnlock(t, w1)
	e.W.WantMissing(n)
}

// TestUnlockLatchStoresNil: an unlock of a hold Redis no longer had answers
// nil, and so does its retry: the latch keeps -1 for nil, never a success.
func TestUnlockLatchStoresNil(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "latch:unlock-nil"
	const request = "0123456789abcdef0123456789abcdef"
	ch := itest.Listen(t, e.Raw, compat.Channel(n))
	for i := range 3 {
		err := itest.RwUnlock(e, n, itest.JavaOwner, "w", request, 0, 0).Error()
		if !rueidis.IsRedisNil(err) {
			t.Fatalf("unlock %d of a missing lock: %v, want nil", i, err)
		}
	}
	if v, ok := e.W.Get(compat.UnlockLatch(n, request)); !ok || v != "-1" {
		t.Fatalf("latch = %q, %v; want \"-1\" (nil)", v, ok)
	}
	// Java's unlock of a missing lock publishes; the retries answer from
	// the latch and publish nothing more.
	ch.Want(compat.ReadUnlockMessage)
	ch.None()
}

// TestRetriedAcquireCountsOnce: an acquire sent again with the same owner
// and stamp (its first reply lost) counts one hold, and so does a further
// hold sent again; a copy that reaches Redis after the accept window, or
// after its owner was given up, takes nothing, however late it comes.
func TestRetriedAcquireCountsOnce(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "latch:attempt"
	owner := compat.Owner("a-client", 1)
	sent := itest.Stamped()
	acquire := func(owner string, stamp []string, further int) []int64 {
		t.Helper()
		reply, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_write_acquire")).Numkeys(5).
			Key(n, fwire.OwnerMarker(n, owner), fwire.Fair(n).State, fwire.Fence(n), fwire.Fair(n).Readers).
			Arg(itest.Args([]string{"30000", compat.WriteField(owner)}, stamp, []string{strconv.Itoa(further)})...).Build()).AsIntSlice()
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		return reply
	}
	first := acquire(owner, sent, 0)
	if first[0] != 1 || first[1] <= 0 {
		t.Fatalf("first acquire = %v, want a grant with a token", first)
	}
	for range 2 {
		if again := acquire(owner, sent, 0); again[0] != 1 || again[1] != first[1] {
			t.Fatalf("retried acquire = %v, want the first grant %v again", again, first)
		}
	}
	e.W.WantHash(n, map[string]string{"mode": "write", compat.WriteField(owner): "1"})

	// A further hold makes the owner's count 2, however often it is sent.
	for range 3 {
		if again := acquire(owner, itest.Stamped(), 2); again[0] != 1 || again[1] != first[1] {
			t.Fatalf("further hold = %v, want a grant keeping the token %d", again, first[1])
		}
	}
	e.W.WantHash(n, map[string]string{"mode": "write", compat.WriteField(owner): "2"})

	// A copy of another owner's attempt that reaches Redis after its window
	// takes nothing (on a free lock too).
	other := compat.Owner("a-client", 2)
	late := []string{strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10), "10000"}
	if got := itest.RwUnlock(e, n, owner, "w", "33333333333333333333333333333333", 0, 0).Error(); got != nil {
		t.Fatalf("release of the owner's holds: %v", got)
	}
	e.W.WantMissing(n)
	if got := acquire(other, late, 0); got[0] != -1 {
		t.Fatalf("stale copy of an attempt: %v, want {-1, 0}", got)
	}
	e.W.WantMissing(n)

	// An owner given up (its Lock cancelled) is marked: a copy of its
	// attempt that arrives afterwards, within its window, takes nothing.
	giveUp := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_unlock")).Numkeys(6).
		Key(n, compat.Channel(n), compat.LeaseKeyPrefix(n, other), compat.KeyPrefix(n), compat.UnlockLatch(n, "44444444444444444444444444444444"), fwire.OwnerMarker(n, other)).
		Arg(itest.Args([]string{"w", compat.ReadField(other), compat.WriteField(other), "publish", "5000", "1", "30000"}, itest.Stamped(), []string{"0", "0"})...).Build())
	if err := giveUp.Error(); !rueidis.IsRedisNil(err) {
		t.Fatalf("give-up of an owner that holds nothing: %v, want nil", err)
	}
	if ttl := e.W.Pttl(fwire.OwnerMarker(n, other)); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("marker PTTL %v, want within (0, 30s]", ttl)
	}
	if got := acquire(other, itest.Stamped(), 0); got[0] != -1 {
		t.Fatalf("late copy of a given-up owner's attempt: %v, want {-1, 0}", got)
	}
	e.W.WantMissing(n)
	// The lock is free for everyone else.
	if got := acquire(compat.Owner("a-client", 3), itest.Stamped(), 0); got[0] != 1 || got[1] <= first[1] {
		t.Fatalf("acquire of the free lock = %v, want a grant with a token above %d", got, first[1])
	}
}

// TestFurtherReadDropsUncountedLeaseKeys: a further read hold sets the
// owner's count to what the client knows alive; the lease keys of holds
// counted above it (ended locally, or released by a racing Unlock) are
// deleted with it, never left to outlive their holds uncounted (found by the
// adversarial pass: Shutdown racing further holds left such keys).
func TestFurtherReadDropsUncountedLeaseKeys(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "latch:further-read"
	owner := compat.Owner("a-client", 1)
	prefix := compat.LeaseKeyPrefix(n, owner)
	acquire := func(further int) []int64 {
		t.Helper()
		reply, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_read_acquire")).Numkeys(6).
			Key(n, prefix, fwire.OwnerMarker(n, owner), fwire.Fair(n).State, fwire.Fence(n), fwire.Fair(n).Readers).
			Arg(itest.Args([]string{"30000", owner, compat.WriteField(owner)}, itest.Stamped(), []string{strconv.Itoa(further)})...).Build()).AsIntSlice()
		if err != nil {
			t.Fatalf("read acquire (further %d): %v", further, err)
		}
		return reply
	}
	for i, further := range []int{0, 2, 3, 4} { // a first hold, then counts 2, 3, 4
		if got := acquire(further); got[0] != 1 {
			t.Fatalf("hold %d: %v, want granted", i, got)
		}
	}
	// The client knows only two holds alive: the next further hold is the 3rd.
	if got := acquire(3); got[0] != 1 {
		t.Fatalf("further hold 3 after 4: %v, want granted", got)
	}
	e.W.WantHash(n, map[string]string{"mode": "read", owner: "3"})
	e.W.WantMissing(prefix + ":4")
	for k := 1; k <= 3; k++ {
		e.W.WantPTTL(prefix+":"+strconv.Itoa(k), 30*time.Second, 5*time.Second)
	}
}
