package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// These tests check fairrw.Mutex as a Java client sees Redisson's RLock:
// the hash and its one field, its PTTL, the channel and its messages, and
// Java's own lock and unlock logic run with raw commands beside Go.

// Java's RLock scripts (RedissonLock.tryLockInnerAsync and
// unlockInnerAsync), as the protocol describes them: nothing of fairrw.
const (
	javaLockAcquire = `
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	javaLockUnlock = `
local val = redis.call('get', KEYS[3])
if val ~= false then return tonumber(val) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1`
)

func mustLockMutex(t *testing.T, m *fairrw.Mutex, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := m.Lock(testCtx(t), opts...)
	if err != nil {
		t.Fatalf("Mutex.Lock %s: %v", hidden.Name(m), err)
	}
	return l
}

func TestRedissonMutexWire(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:mutex"
	if got := compat.MutexChannel(n); got != "redisson_lock__channel:{wire:mutex}" {
		t.Fatalf("channel %q", got)
	}
	ch := listen(t, e.raw, "redisson_lock__channel:{wire:mutex}")
	c := e.client(t)
	m := c.Mutex(n)

	first := mustLockMutex(t, m)
	owner := first.Owner()
	id, ok := strings.CutPrefix(owner, hidden.ClientID(c)+":")
	if _, err := strconv.ParseUint(id, 10, 64); !ok || err != nil {
		t.Fatalf("lease owner %s, want <client id>:<owner id> with client id %s", owner, hidden.ClientID(c))
	}
	e.w.wantHash(n, map[string]string{owner: "1"})
	e.w.wantPTTL(n, hidden.LeaseTime, slack)

	// Java's reentrant lock sets the lease again: it does not add to it.
	second := mustFurther(t, first, fairrw.Write)
	e.w.wantHash(n, map[string]string{owner: "2"})
	e.w.wantPTTL(n, hidden.LeaseTime, slack)

	// The remaining hold keeps the hash for what it has left, about the
	// lease here (Java sets the lease again).
	mustUnlock(t, second)
	e.w.wantHash(n, map[string]string{owner: "1"})
	e.w.wantPTTL(n, hidden.LeaseTime, slack)
	ch.none()

	mustUnlock(t, first)
	e.w.wantMissing(n)
	ch.want("0")
	ch.none()
	e.w.eventuallyNoneLike(n)
}

// TestRedissonMutexWireKeys: beside the hash, fairrw keeps only its own
// key of the lock's last fencing token (with a TTL), named by the brace rule, and publishes on the channel named by it.
func TestRedissonMutexWireKeys(t *testing.T) {
	e := newWireEnv(t)
	c := e.client(t)
	for _, tc := range []struct{ name, tag string }{
		{"wire:mutex:a:b", "{wire:mutex:a:b}"},
		{"wire:mutex:{tenant-7}:42", "wire:mutex:{tenant-7}:42"},
		{"{wire:mutex:x}", "{wire:mutex:x}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fence := "fairrw:" + strconv.Itoa(len(tc.name)) + ":" + tc.tag + ":fence"
			if got := fwire.Fence(tc.name); got != fence {
				t.Fatalf("fwire.Fence(%q) = %q, want %q", tc.name, got, fence)
			}
			ch := listen(t, e.raw, "redisson_lock__channel:"+tc.tag)
			m := c.Mutex(tc.name)
			first := mustLockMutex(t, m)
			second := mustFurther(t, first, fairrw.Write)
			e.w.wantHash(tc.name, map[string]string{first.Owner(): "2"})
			for _, k := range keysLike(t, e, tc.name) {
				switch k {
				case tc.name, fence:
				default:
					t.Errorf("unexpected key %s", k)
				}
			}
			if first.Token() == 0 || second.Token() != first.Token() {
				t.Errorf("tokens %d then %d, want a token kept by the reentrant hold", first.Token(), second.Token())
			}
			// The last token is kept a while only (it may be gone already).
			if v, ok := e.w.get(fence); ok {
				if token, err := strconv.ParseUint(v, 10, 64); err != nil || token != first.Token() {
					t.Errorf("fencing token = %q, want the grant's %d", v, first.Token())
				}
				if ttl := e.w.pttl(fence); ttl <= 0 && ttl != -2*time.Millisecond {
					t.Errorf("fencing token's PTTL %v, want a TTL", ttl)
				}
			}
			mustUnlock(t, second)
			mustUnlock(t, first)
			ch.want("0")
			e.w.wantMissing(tc.name)
			e.w.eventuallyNoneLike(tc.name)
		})
	}
}

// TestRedissonMutexWireUnlockNotHeld: an unlock by an owner that holds
// nothing answers nil and publishes nothing (unlike the read-write lock's,
// Java's RLock unlock does not publish then), on a free and a held mutex;
// a force-unlock publishes "0" once.
func TestRedissonMutexWireUnlockNotHeld(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:mutex:not-held"
	ch := listen(t, e.raw, compat.MutexChannel(n))
	c := e.client(t)
	javaUnlock := func(request string) error {
		return mutexUnlock(e, n, javaOwner, request, 0, 0).Error()
	}
	if err := javaUnlock("11111111111111111111111111111111"); !rueidis.IsRedisNil(err) {
		t.Fatalf("unlock of a free mutex: %v, want nil", err)
	}
	e.w.wantMissing(n)
	ch.none()

	held := mustLockMutex(t, c.Mutex(n))
	if err := javaUnlock("22222222222222222222222222222222"); !rueidis.IsRedisNil(err) {
		t.Fatalf("unlock by a non-owner: %v, want nil", err)
	}
	e.w.wantHash(n, map[string]string{held.Owner(): "1"})
	ch.none()

	if err := c.Mutex(n).ForceUnlock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	e.w.wantMissing(n)
	ch.want("0")
	if err := held.Unlock(testCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("unlock after a force-unlock: %v, want ErrNotHeld", err)
	}
	ch.none()
	e.w.eventuallyNoneLike(n)
}

func TestRedissonMutexWireExplicitLease(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:mutex:explicit"
	m := e.client(t).Mutex(n)
	first := mustLockMutex(t, m, fairrw.WithLease(10*time.Second))
	e.w.wantPTTL(n, 10*time.Second, slack)
	second := mustFurther(t, first, fairrw.Write, fairrw.WithLease(20*time.Second))
	e.w.wantPTTL(n, 20*time.Second, slack)
	mustUnlock(t, second)
	mustUnlock(t, first)
	e.w.wantMissing(n)
}

// TestRedissonMutexUnlockLatch: an unlock retried with the same request id
// (its first reply lost) answers as the first call did, releases one hold
// only, and publishes once.
func TestRedissonMutexUnlockLatch(t *testing.T) {
	e := newWireEnv(t)
	const n = "wire:mutex:latch"
	ch := listen(t, e.raw, compat.MutexChannel(n))
	m := e.client(t).Mutex(n)
	first := mustLockMutex(t, m)
	second := mustFurther(t, first, fairrw.Write)
	// Each raw unlock passes what the owner still holds after it, as fairrw
	// does: one hold (30s left), then none.
	for _, step := range []struct {
		request string
		left    int
		want    int64
	}{
		{"00112233445566778899aabbccddeeff", 1, 0},
		{"ffeeddccbbaa99887766554433221100", 0, 1},
	} {
		for range 3 {
			if got, err := mutexUnlock(e, n, first.Owner(), step.request, step.left, 30*time.Second).AsInt64(); err != nil || got != step.want {
				t.Fatalf("unlock %s = %d, %v; want %d every time", step.request, got, err, step.want)
			}
		}
		if v, ok := e.w.get(compat.UnlockLatch(n, step.request)); !ok || v != strconv.FormatInt(step.want, 10) {
			t.Fatalf("latch %s = %q, %v; want %d", step.request, v, ok, step.want)
		}
		if step.want == 0 {
			e.w.wantHash(n, map[string]string{first.Owner(): "1"})
			ch.none()
		}
	}
	e.w.wantMissing(n)
	ch.want("0")
	ch.none()
	for _, l := range []*fairrw.Lease{second, first} {
		if err := l.Unlock(testCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
			t.Fatalf("Go unlock after the raw ones: %v, want ErrNotHeld", err)
		}
	}
}

// TestJavaMutexHolderBlocksGo: a Java holder (HSET and PEXPIRE of its field)
// turns Go away; its unlock (DEL, PUBLISH "0") wakes a waiting Go Lock by
// the message or the invalidation, long before the hash's PTTL.
func TestJavaMutexHolderBlocksGo(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newWireEnv(t)
			n := "interop:java-mutex:" + tr.name
			e.w.javaHolds(n, time.Minute, javaOwner, "1")
			c := newClient(t, e.r, tr)
			if _, err := c.Mutex(n).TryLock(testCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("Go TryLock beside a Java holder: %v, want ErrNotAcquired", err)
			}
			got := make(chan *fairrw.Lease, 1)
			go func() {
				l, err := c.Mutex(n).Lock(testCtx(t))
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			waitSubscribers(t, e, compat.MutexChannel(n), 1)
			e.w.javaReleases(n, compat.MutexChannel(n), compat.MutexUnlockMessage)
			select {
			case l := <-got:
				if l == nil {
					t.FailNow()
				}
				if hidden.WokenBy(l) == "timer" {
					t.Errorf("Go waiter woken by the PTTL timer, not by the Java unlock")
				}
				e.w.wantHash(n, map[string]string{l.Owner(): "1"})
				mustUnlock(t, l)
			case <-time.After(20 * time.Second):
				t.Fatal("Go Lock still waits after the Java holder left (PTTL is 60s)")
			}
		})
	}
}

// TestGoMutexHolderSeenByJava: Java's own lock logic, run on the state a Go
// holder left, refuses; Java's queries see the Go holder; once Go unlocks,
// Java takes the mutex, Go is refused, and Java's unlock frees it.
func TestGoMutexHolderSeenByJava(t *testing.T) {
	e := newWireEnv(t)
	const n = "interop:go-mutex"
	ch := listen(t, e.raw, compat.MutexChannel(n))
	m := e.client(t).Mutex(n)
	held := mustLockMutex(t, m)
	javaLock := func() (int64, bool) {
		pttl, err := e.raw.Do(testCtx(t), e.raw.B().Eval().Script(javaLockAcquire).Numkeys(1).
			Key(n).Arg("30000", javaOwner).Build()).AsInt64()
		if rueidis.IsRedisNil(err) {
			return 0, true
		}
		if err != nil {
			t.Fatalf("Java lock: %v", err)
		}
		return pttl, false
	}
	if pttl, ok := javaLock(); ok || pttl <= 0 {
		t.Fatalf("Java lock beside a Go holder: acquired=%v pttl=%d", ok, pttl)
	}
	// isLocked, isHeldByThread, getHoldCount.
	exists, _ := e.raw.Do(testCtx(t), e.raw.B().Exists().Key(n).Build()).AsInt64()
	goHeld, _ := e.raw.Do(testCtx(t), e.raw.B().Hexists().Key(n).Field(held.Owner()).Build()).AsInt64()
	javaHeld, _ := e.raw.Do(testCtx(t), e.raw.B().Hexists().Key(n).Field(javaOwner).Build()).AsInt64()
	count, _ := e.raw.Do(testCtx(t), e.raw.B().Hget().Key(n).Field(held.Owner()).Build()).ToString()
	if exists != 1 || goHeld != 1 || javaHeld != 0 || count != "1" {
		t.Fatalf("Java's queries: isLocked %d, held by Go %d, by Java %d, Go's count %q", exists, goHeld, javaHeld, count)
	}
	mustUnlock(t, held)
	ch.want("0")

	if _, ok := javaLock(); !ok {
		t.Fatal("Java lock refused on a free mutex")
	}
	e.w.wantHash(n, map[string]string{javaOwner: "1"})
	if _, err := m.TryLock(testCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("Go TryLock beside a Java holder: %v, want ErrNotAcquired", err)
	}
	freed, err := e.raw.Do(testCtx(t), e.raw.B().Eval().Script(javaLockUnlock).Numkeys(3).
		Key(n, compat.MutexChannel(n), compat.UnlockLatch(n, "33333333333333333333333333333333")).
		Arg("0", "30000", javaOwner, "publish", "5000").Build()).AsInt64()
	if err != nil || freed != 1 {
		t.Fatalf("Java unlock = %d, %v; want 1", freed, err)
	}
	ch.want("0")
	mustUnlock(t, mustLockMutex(t, m))
}

// mutexUnlock runs fairrw's RLock unlock script raw, as owner, with
// request's latch: the owner still holds left holds, the longest with cover
// left (what fairrw passes; 0 and 0 for its last hold or for an owner that
// holds nothing).
func mutexUnlock(e wireEnv, n, owner, request string, left int, cover time.Duration) rueidis.RedisResult {
	e.w.t.Helper()
	return e.raw.Do(testCtx(e.w.t), e.raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_lock_unlock")).Numkeys(4).
		Key(n, compat.MutexChannel(n), compat.UnlockLatch(n, request), fwire.OwnerMarker(n, owner)).
		Arg(args([]string{compat.MutexUnlockMessage, owner, "publish", "5000", "0", "5000"}, stamped(),
			[]string{strconv.Itoa(left), strconv.FormatInt(cover.Milliseconds(), 10)})...).Build())
}

// keysLike lists the keys that contain part.
func keysLike(t *testing.T, e wireEnv, part string) []string {
	t.Helper()
	keys, err := e.raw.Do(testCtx(t), e.raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	return out
}
