package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/locktest"
	"github.com/fairrw/rwlock/internal/redistest"
)

// These tests check, after each operation, what a Java Redisson client would
// see: the hash and its fields, the per-read-hold lease keys, their TTLs, and
// the messages on the channel (see shared/docs/redisson-protocol.md).

const slack = 2 * time.Second // PTTL tolerance for a loaded 2-core machine

type wireEnv struct {
	r   *redistest.Redis
	raw rueidis.Client
	w   wire
}

func newWireEnv(t *testing.T) wireEnv {
	r := redistest.Start(t)
	raw := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	return wireEnv{r: r, raw: raw, w: wire{t: t, raw: raw}}
}

func (e wireEnv) client(t *testing.T, opts ...fairrw.Option) *fairrw.Client {
	return newClient(t, e.r, transports[0], append([]fairrw.Option{fairrw.WithPolicy(fairrw.Redisson())}, opts...)...)
}

func mustLock(t *testing.T, m *fairrw.RWMutex, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := locktest.Acquire(testCtx(t), m, mode, true, opts...)
	if err != nil {
		t.Fatalf("%s %s: %v", mode, hidden.Name(m), err)
	}
	return l
}

// mustFurther takes a further hold of mode for the owner of l: a reentrant
// hold, or a downgrade's read from the write.
func mustFurther(t *testing.T, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	var got *fairrw.Lease
	var err error
	if mode == fairrw.Write {
		got, err = l.Lock(testCtx(t), opts...)
	} else {
		got, err = l.RLock(testCtx(t), opts...)
	}
	if err != nil {
		t.Fatalf("further %s on %s: %v", mode, hidden.Name(l), err)
	}
	if got.Owner() != l.Owner() {
		t.Fatalf("further %s under owner %s, want %s", mode, got.Owner(), l.Owner())
	}
	return got
}

func mustUnlock(t *testing.T, l *fairrw.Lease) {
	t.Helper()
	if err := l.Unlock(testCtx(t)); err != nil {
		t.Fatalf("unlock: %v", err)
	}
}

func TestRedissonWireRead(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:read"
	ch := listen(t, e.raw, compat.Channel(n))
	m := e.client(t).RWMutex(n)
	r1 := mustLock(t, m, fairrw.Read)
	owner := r1.Owner()
	lease1, lease2 := compat.LeaseKey(n, owner, 1), compat.LeaseKey(n, owner, 2)
	e.w.wantHash(n, map[string]string{"mode": "read", owner: "1"})
	if v, ok := e.w.get(lease1); !ok || v != "1" {
		t.Fatalf("%s = %q, %v; want \"1\"", lease1, v, ok)
	}
	e.w.wantPTTL(lease1, hidden.LeaseTime, slack)
	e.w.wantPTTL(n, hidden.LeaseTime, slack)

	r2 := mustFurther(t, r1, fairrw.Read) // a reentrant read of the same owner
	e.w.wantHash(n, map[string]string{"mode": "read", owner: "2"})
	e.w.wantPTTL(lease2, hidden.LeaseTime, slack)

	mustUnlock(t, r2)
	e.w.wantHash(n, map[string]string{"mode": "read", owner: "1"})
	e.w.wantMissing(lease2)
	ch.none()

	mustUnlock(t, r1)
	e.w.wantMissing(n, lease1)
	ch.want(compat.UnlockMessage)
	e.w.eventuallyNoneLike(n)
}

func TestRedissonWireWrite(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:write"
	ch := listen(t, e.raw, compat.Channel(n))
	m := e.client(t).RWMutex(n)
	w1 := mustLock(t, m, fairrw.Write)
	field := compat.WriteField(w1.Owner())
	e.w.wantHash(n, map[string]string{"mode": "write", field: "1"})
	e.w.wantPTTL(n, hidden.LeaseTime, slack)

	// Redisson's quirk: a reentrant write adds its lease to the PTTL.
	w2 := mustFurther(t, w1, fairrw.Write)
	e.w.wantHash(n, map[string]string{"mode": "write", field: "2"})
	e.w.wantPTTL(n, 2*hidden.LeaseTime+hidden.LeaseMargin, slack) // each lease with its margin

	// The remaining reentrant hold keeps the hash for what it has left (Java
	// sets the lease again; fairrw never shortens another live hold, and
	// here what w1 has left is about the lease).
	mustUnlock(t, w2)
	e.w.wantHash(n, map[string]string{"mode": "write", field: "1"})
	e.w.wantPTTL(n, hidden.LeaseTime, slack)
	ch.none()

	mustUnlock(t, w1)
	e.w.wantMissing(n)
	ch.want(compat.ReadUnlockMessage)
	e.w.eventuallyNoneLike(n)
}

func TestRedissonWireDowngrade(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:downgrade"
	ch := listen(t, e.raw, compat.Channel(n))
	m := e.client(t).RWMutex(n)
	w := mustLock(t, m, fairrw.Write)
	owner := w.Owner()
	r := mustFurther(t, w, fairrw.Read) // the downgrade hold
	e.w.wantHash(n, map[string]string{"mode": "write", compat.WriteField(owner): "1", owner: "1"})
	e.w.wantPTTL(compat.LeaseKey(n, owner, 1), hidden.LeaseTime, slack)

	// Releasing the write turns the lock into a read lock, silently.
	mustUnlock(t, w)
	e.w.wantHash(n, map[string]string{"mode": "read", owner: "1"})
	ch.none()

	mustUnlock(t, r)
	e.w.wantMissing(n, compat.LeaseKey(n, owner, 1))
	ch.want(compat.UnlockMessage)
}

func TestRedissonWireLeases(t *testing.T) {
	e := newWireEnv(t)
	c := e.client(t)

	t.Run("explicit lease", func(t *testing.T) {
		const n = "wire:explicit"
		l := mustLock(t, c.RWMutex(n), fairrw.Write, fairrw.WithLease(10*time.Second))
		e.w.wantPTTL(n, 10*time.Second, slack)
		mustUnlock(t, l)
	})

	t.Run("a shorter second lease never shortens the lock", func(t *testing.T) {
		const n = "wire:shorter"
		a := mustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(20*time.Second))
		b := mustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(time.Second))
		e.w.wantPTTL(n, 20*time.Second, slack)
		mustUnlock(t, b)
		mustUnlock(t, a)
	})

	t.Run("read unlock shrinks the TTL to the longest remaining read lease", func(t *testing.T) {
		const n = "wire:shrink"
		long := mustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(20*time.Second))
		s := mustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(8*time.Second))
		e.w.wantPTTL(n, 20*time.Second, slack)
		mustUnlock(t, long)
		remaining := e.w.pttl(compat.LeaseKey(n, s.Owner(), 1))
		// Redis rounds each PTTL down to the millisecond: the hash, set from
		// the lease key's PTTL within the same millisecond, may read 1ms more.
		e.w.wantPTTL(n, remaining+time.Millisecond, time.Millisecond+50*time.Millisecond+slack/20)
		if remaining > 8*time.Second+hidden.LeaseMargin {
			t.Fatalf("remaining read lease %v > 8s and LeaseMargin", remaining)
		}
		mustUnlock(t, s)
	})
}

func TestRedissonWireForceUnlock(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:force"
	ch := listen(t, e.raw, compat.Channel(n))
	c := e.client(t)
	m := c.RWMutex(n)

	w := mustLock(t, m, fairrw.Write)
	if err := m.ForceUnlock(testCtx(t), fairrw.Read); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("read force-unlock of a write lock: %v, want ErrNotHeld", err)
	}
	e.w.wantHash(n, map[string]string{"mode": "write", compat.WriteField(w.Owner()): "1"})
	if err := m.ForceUnlock(testCtx(t), fairrw.Write); err != nil {
		t.Fatal(err)
	}
	e.w.wantMissing(n)
	ch.want(compat.ReadUnlockMessage)
	// The holder is told at its unlock: Redis no longer has its hold.
	if err := w.Unlock(testCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("unlock after force-unlock: %v, want ErrNotHeld", err)
	}
	// Unlocking a missing lock publishes (Java's quirk, kept for parity).
	ch.want(compat.ReadUnlockMessage)

	r := mustLock(t, c.RWMutex(n), fairrw.Read)
	if err := m.ForceUnlock(testCtx(t), fairrw.Write); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("write force-unlock of a read lock: %v, want ErrNotHeld", err)
	}
	if err := m.ForceUnlock(testCtx(t), fairrw.Read); err != nil {
		t.Fatal(err)
	}
	e.w.wantMissing(n)
	ch.want(compat.UnlockMessage)
	_ = r.Unlock(testCtx(t))
}

func TestRedissonWireNames(t *testing.T) {
	e := newWireEnv(t)
	c := e.client(t)
	for _, n := range []string{"orders:{tenant-7}:42", "a:b:c", "{x}", "ünïcødé:名前"} {
		t.Run(n, func(t *testing.T) {
			m := c.RWMutex(n)
			r := mustLock(t, m, fairrw.Read)
			e.w.wantHash(n, map[string]string{"mode": "read", r.Owner(): "1"})
			if _, ok := e.w.get(compat.LeaseKey(n, r.Owner(), 1)); !ok {
				t.Fatalf("lease key %s missing", compat.LeaseKey(n, r.Owner(), 1))
			}
			mustUnlock(t, r)
			w := mustLock(t, m, fairrw.Write)
			e.w.wantHash(n, map[string]string{"mode": "write", compat.WriteField(w.Owner()): "1"})
			mustUnlock(t, w)
			e.w.wantMissing(n)
		})
	}
}

// TestRedissonWireLastReaderFreesCrashedReaders: a reader that crashed
// leaves its field in the hash and its lease key expires. The last live
// reader's unlock finds it expired and frees the lock as Java's does: the
// hash is deleted at once and "0" is published, so waiters wake.
func TestRedissonWireLastReaderFreesCrashedReaders(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:crashed-reader"
	ch := listen(t, e.raw, compat.Channel(n))
	// The crashed reader: its field, and no lease key (expired).
	e.w.javaHolds(n, time.Minute, "mode", "read", javaOwner, "1")
	r := mustLock(t, e.client(t).RWMutex(n), fairrw.Read)
	e.w.wantHash(n, map[string]string{"mode": "read", javaOwner: "1", r.Owner(): "1"})
	mustUnlock(t, r)
	e.w.wantMissing(n)
	ch.want(compat.UnlockMessage)
}
