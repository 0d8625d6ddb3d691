package redisson

import (
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
)

const slack = 2 * time.Second

func TestRedissonWireRead(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:read"
	ch := itest.Listen(t, e.Raw, compat.Channel(n))
	m := e.Client(t).RWMutex(n)
	r1 := itest.MustLock(t, m, fairrw.Read)
	owner := r1.Owner()
	lease1, lease2 := compat.LeaseKey(n, owner, 1), compat.LeaseKey(n, owner, 2)
	e.W.WantHash(n, map[string]string{"mode": "read", owner: "1"})
	if v, ok := e.W.Get(lease1); !ok || v != "1" {
		t.Fatalf("%s = %q, %v; want \"1\"", lease1, v, ok)
	}
	e.W.WantPTTL(lease1, hidden.LeaseTime, slack)
	e.W.WantPTTL(n, hidden.LeaseTime, slack)

	r2 := itest.MustFurther(t, r1, fairrw.Read) // a reentrant read of the same owner
	e.W.WantHash(n, map[string]string{"mode": "read", owner: "2"})
	e.W.WantPTTL(lease2, hidden.LeaseTime, slack)

	itest.MustUnlock(t, r2)
	e.W.WantHash(n, map[string]string{"mode": "read", owner: "1"})
	e.W.WantMissing(lease2)
	ch.None()

	itest.MustUnlock(t, r1)
	e.W.WantMissing(n, lease1)
	ch.Want(compat.UnlockMessage)
	e.W.EventuallyNoneLike(n)
}

func TestRedissonWireWrite(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:write"
	ch := itest.Listen(t, e.Raw, compat.Channel(n))
	m := e.Client(t).RWMutex(n)
	w1 := itest.MustLock(t, m, fairrw.Write)
	field := compat.WriteField(w1.Owner())
	e.W.WantHash(n, map[string]string{"mode": "write", field: "1"})
	e.W.WantPTTL(n, hidden.LeaseTime, slack)

	// Redisson's quirk: a reentrant write adds its lease to the PTTL.
	w2 := itest.MustFurther(t, w1, fairrw.Write)
	e.W.WantHash(n, map[string]string{"mode": "write", field: "2"})
	e.W.WantPTTL(n, 2*hidden.LeaseTime+hidden.LeaseMargin, slack) // each lease with its margin

	// The remaining reentrant hold keeps the hash for what it has left (Java
	// sets the lease again; fairrw never shortens another live hold, and
	// here what w1 has left is about the lease).
	itest.MustUnlock(t, w2)
	e.W.WantHash(n, map[string]string{"mode": "write", field: "1"})
	e.W.WantPTTL(n, hidden.LeaseTime, slack)
	ch.None()

	itest.MustUnlock(t, w1)
	e.W.WantMissing(n)
	ch.Want(compat.ReadUnlockMessage)
	e.W.EventuallyNoneLike(n)
}

func TestRedissonWireDowngrade(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:downgrade"
	ch := itest.Listen(t, e.Raw, compat.Channel(n))
	m := e.Client(t).RWMutex(n)
	w := itest.MustLock(t, m, fairrw.Write)
	owner := w.Owner()
	r := itest.MustFurther(t, w, fairrw.Read) // the downgrade hold
	e.W.WantHash(n, map[string]string{"mode": "write", compat.WriteField(owner): "1", owner: "1"})
	e.W.WantPTTL(compat.LeaseKey(n, owner, 1), hidden.LeaseTime, slack)

	// Releasing the write turns the lock into a read lock, silently.
	itest.MustUnlock(t, w)
	e.W.WantHash(n, map[string]string{"mode": "read", owner: "1"})
	ch.None()

	itest.MustUnlock(t, r)
	e.W.WantMissing(n, compat.LeaseKey(n, owner, 1))
	ch.Want(compat.UnlockMessage)
}

func TestRedissonWireLeases(t *testing.T) {
	e := itest.NewWireEnv(t)
	c := e.Client(t)

	t.Run("explicit lease", func(t *testing.T) {
		const n = "wire:explicit"
		l := itest.MustLock(t, c.RWMutex(n), fairrw.Write, fairrw.WithLease(10*time.Second))
		e.W.WantPTTL(n, 10*time.Second, slack)
		itest.MustUnlock(t, l)
	})

	t.Run("a shorter second lease never shortens the lock", func(t *testing.T) {
		const n = "wire:shorter"
		a := itest.MustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(20*time.Second))
		b := itest.MustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(time.Second))
		e.W.WantPTTL(n, 20*time.Second, slack)
		itest.MustUnlock(t, b)
		itest.MustUnlock(t, a)
	})

	t.Run("read unlock shrinks the TTL to the longest remaining read lease", func(t *testing.T) {
		const n = "wire:shrink"
		long := itest.MustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(20*time.Second))
		s := itest.MustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(8*time.Second))
		e.W.WantPTTL(n, 20*time.Second, slack)
		itest.MustUnlock(t, long)
		remaining := e.W.Pttl(compat.LeaseKey(n, s.Owner(), 1))
		// Redis rounds each PTTL down to the millisecond: the hash, set from
		// the lease key's PTTL within the same millisecond, may read 1ms more.
		e.W.WantPTTL(n, remaining+time.Millisecond, time.Millisecond+50*time.Millisecond+slack/20)
		if remaining > 8*time.Second+hidden.LeaseMargin {
			t.Fatalf("remaining read lease %v > 8s and LeaseMargin", remaining)
		}
		itest.MustUnlock(t, s)
	})
}

func TestRedissonWireForceUnlock(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:force"
	ch := itest.Listen(t, e.Raw, compat.Channel(n))
	c := e.Client(t)
	m := c.RWMutex(n)

	w := itest.MustLock(t, m, fairrw.Write)
	if err := m.ForceUnlock(itest.TestCtx(t), fairrw.Read); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("read force-unlock of a write lock: %v, want ErrNotHeld", err)
	}
	e.W.WantHash(n, map[string]string{"mode": "write", compat.WriteField(w.Owner()): "1"})
	if err := m.ForceUnlock(itest.TestCtx(t), fairrw.Write); err != nil {
		t.Fatal(err)
	}
	e.W.WantMissing(n)
	ch.Want(compat.ReadUnlockMessage)
	// The holder is told at its unlock: Redis no longer has its hold.
	if err := w.Unlock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("unlock after force-unlock: %v, want ErrNotHeld", err)
	}
	// Unlocking a missing lock publishes (Java's quirk, kept for parity).
	ch.Want(compat.ReadUnlockMessage)

	r := itest.MustLock(t, c.RWMutex(n), fairrw.Read)
	if err := m.ForceUnlock(itest.TestCtx(t), fairrw.Write); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("write force-unlock of a read lock: %v, want ErrNotHeld", err)
	}
	if err := m.ForceUnlock(itest.TestCtx(t), fairrw.Read); err != nil {
		t.Fatal(err)
	}
	e.W.WantMissing(n)
	ch.Want(compat.UnlockMessage)
	_ = r.Unlock(itest.TestCtx(t))
}

func TestRedissonWireNames(t *testing.T) {
	e := itest.NewWireEnv(t)
	c := e.Client(t)
	for _, n := range []string{"orders:{tenant-7}:42", "a:b:c", "{x}", "ünïcødé:名前"} {
		t.Run(n, func(t *testing.T) {
			m := c.RWMutex(n)
			r := itest.MustLock(t, m, fairrw.Read)
			e.W.WantHash(n, map[string]string{"mode": "read", r.Owner(): "1"})
			if _, ok := e.W.Get(compat.LeaseKey(n, r.Owner(), 1)); !ok {
				t.Fatalf("lease key %s missing", compat.LeaseKey(n, r.Owner(), 1))
			}
			itest.MustUnlock(t, r)
			w := itest.MustLock(t, m, fairrw.Write)
			e.W.WantHash(n, map[string]string{"mode": "write", compat.WriteField(w.Owner()): "1"})
			itest.MustUnlock(t, w)
			e.W.WantMissing(n)
		})
	}
}

// TestRedissonWireLastReaderFreesCrashedReaders: a reader that crashed
// leaves its field in the hash and its lease key expires. The last live
// reader's unlock finds it expired and frees the lock as Java's does: the
// hash is deleted at once and "0" is published, so waiters wake.
func TestRedissonWireLastReaderFreesCrashedReaders(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:crashed-reader"
	ch := itest.Listen(t, e.Raw, compat.Channel(n))
	// The crashed reader: its field, and no lease key (expired).
	e.W.JavaHolds(n, time.Minute, "mode", "read", itest.JavaOwner, "1")
	r := itest.MustLock(t, e.Client(t).RWMutex(n), fairrw.Read)
	e.W.WantHash(n, map[string]string{"mode": "read", itest.JavaOwner: "1", r.Owner(): "1"})
	itest.MustUnlock(t, r)
	e.W.WantMissing(n)
	ch.Want(compat.UnlockMessage)
}
