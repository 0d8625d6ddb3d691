package integration

import (
	"testing"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/lua"
)

// TestUnlockLatchMakesRetriesIdempotent: an unlock retried with the same
// request id (its first reply lost) answers as the first call did and
// releases one hold only.
func TestUnlockLatchMakesRetriesIdempotent(t *testing.T) {
	e := newWireEnv(t)
	const n = "latch:unlock"
	m := e.client(t).RWMutex(n)
	w1 := mustLock(t, m, fairrw.Write)
	w2 := mustLock(t, m, fairrw.Write)
	defer mustUnlock(t, w1)
	_ = w2
	field := compat.WriteField(m.Owner())
	const request = "00112233445566778899aabbccddeeff"
	unlock := func() (int64, error) {
		return e.raw.Do(testCtx(t), e.raw.B().Eval().Script(lua.Compose("redisson_lib", "redisson_write_unlock")).Numkeys(4).
			Key(n, compat.Channel(n), compat.UnlockLatch(n, request), compat.AttemptLatch(n, "none")).
			Arg(compat.ReadUnlockMessage, "30000", field, "publish", "5000", "del", "5000").Build()).AsInt64()
	}
	for range 3 {
		got, err := unlock()
		if err != nil || got != 0 {
			t.Fatalf("retried unlock = %d, %v; want 0 (still held) every time", got, err)
		}
	}
	e.w.wantHash(n, map[string]string{"mode": "write", field: "1"})
	if v, ok := e.w.get(compat.UnlockLatch(n, request)); !ok || v != "0" {
		t.Fatalf("latch = %q, %v; want \"0\"", v, ok)
	}
}

// TestAttemptLatchMakesAcquireIdempotent: an acquire retried with the same
// attempt id counts one hold; once aborted, a late copy takes nothing.
func TestAttemptLatchMakesAcquireIdempotent(t *testing.T) {
	e := newWireEnv(t)
	const n = "latch:attempt"
	owner := compat.Owner("a-client", 1)
	acquire := func(attempt string) []int64 {
		reply, err := e.raw.Do(testCtx(t), e.raw.B().Eval().Script(lua.Compose("redisson_lib", "redisson_write_acquire")).Numkeys(4).
			Key(n, compat.AttemptLatch(n, attempt), compat.Fair(n).State, compat.Fence(n)).
			Arg("30000", compat.WriteField(owner), "5000").Build()).AsIntSlice()
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		return reply
	}
	first := acquire("first")
	for range 2 {
		if again := acquire("first"); again[0] != 1 || again[1] != first[1] {
			t.Fatalf("retried acquire = %v, want the first grant %v again", again, first)
		}
	}
	e.w.wantHash(n, map[string]string{"mode": "write", compat.WriteField(owner): "1"})

	abort := e.raw.Do(testCtx(t), e.raw.B().Eval().Script(lua.Source("attempt_abort")).Numkeys(1).
		Key(compat.AttemptLatch(n, "second")).Arg("5000").Build())
	if got, err := abort.AsInt64(); err != nil || got != 0 {
		t.Fatalf("abort of an attempt never run = %d, %v; want 0", got, err)
	}
	if late := acquire("second"); late[0] != -1 {
		t.Fatalf("late copy of an aborted attempt: %v, want {-1, 0}", late)
	}
	e.w.wantHash(n, map[string]string{"mode": "write", compat.WriteField(owner): "1"})
}
