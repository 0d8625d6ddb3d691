package redisson

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

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

func TestRedissonMutexWire(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:mutex"
	if got := compat.MutexChannel(n); got != "redisson_lock__channel:{wire:mutex}" {
		t.Fatalf("channel %q", got)
	}
	ch := itest.Listen(t, e.Raw, "redisson_lock__channel:{wire:mutex}")
	c := e.Client(t)
	m := c.Mutex(n)

	first := itest.MustLockMutex(t, m)
	owner := first.Owner()
	id, ok := strings.CutPrefix(owner, hidden.ClientID(c)+":")
	if _, err := strconv.ParseUint(id, 10, 64); !ok || err != nil {
		t.Fatalf("lease owner %s, want <client id>:<owner id> with client id %s", owner, hidden.ClientID(c))
	}
	e.W.WantHash(n, map[string]string{owner: "1"})
	e.W.WantPTTL(n, hidden.LeaseTime, slack)

	// Java's reentrant lock sets the lease again: it does not add to it.
	second := itest.MustFurther(t, first, fairrw.Write)
	e.W.WantHash(n, map[string]string{owner: "2"})
	e.W.WantPTTL(n, hidden.LeaseTime, slack)

	// The remaining hold keeps the hash for what it has left, about the
	// lease here (Java sets the lease again).
	itest.MustUnlock(t, second)
	e.W.WantHash(n, map[string]string{owner: "1"})
	e.W.WantPTTL(n, hidden.LeaseTime, slack)
	ch.None()

	itest.MustUnlock(t, first)
	e.W.WantMissing(n)
	ch.Want("0")
	ch.None()
	e.W.EventuallyNoneLike(n)
}

// TestRedissonMutexWireKeys: beside the hash, fairrw keeps only its own
// key of the lock's last fencing token (with a TTL), named by the brace rule, and publishes on the channel named by it.
func TestRedissonMutexWireKeys(t *testing.T) {
	e := itest.NewWireEnv(t)
	c := e.Client(t)
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
			ch := itest.Listen(t, e.Raw, "redisson_lock__channel:"+tc.tag)
			m := c.Mutex(tc.name)
			first := itest.MustLockMutex(t, m)
			second := itest.MustFurther(t, first, fairrw.Write)
			e.W.WantHash(tc.name, map[string]string{first.Owner(): "2"})
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
			if v, ok := e.W.Get(fence); ok {
				if token, err := strconv.ParseUint(v, 10, 64); err != nil || token != first.Token() {
					t.Errorf("fencing token = %q, want the grant's %d", v, first.Token())
				}
				if ttl := e.W.Pttl(fence); ttl <= 0 && ttl != -2*time.Millisecond {
					t.Errorf("fencing token's PTTL %v, want a TTL", ttl)
				}
			}
			itest.MustUnlock(t, second)
			itest.MustUnlock(t, first)
			ch.Want("0")
			e.W.WantMissing(tc.name)
			e.W.EventuallyNoneLike(tc.name)
		})
	}
}

// TestRedissonMutexWireUnlockNotHeld: an unlock by an owner that holds
// nothing answers nil and publishes nothing (unlike the read-write lock's,
// Java's RLock unlock does not publish then), on a free and a held mutex;
// a force-unlock publishes "0" once.
func TestRedissonMutexWireUnlockNotHeld(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:mutex:not-held"
	ch := itest.Listen(t, e.Raw, compat.MutexChannel(n))
	c := e.Client(t)
	javaUnlock := func(request string) error {
		return mutexUnlock(e, n, itest.JavaOwner, request, 0, 0).Error()
	}
	if err := javaUnlock("11111111111111111111111111111111"); !rueidis.IsRedisNil(err) {
		t.Fatalf("unlock of a free mutex: %v, want nil", err)
	}
	e.W.WantMissing(n)
	ch.None()

	held := itest.MustLockMutex(t, c.Mutex(n))
	if err := javaUnlock("22222222222222222222222222222222"); !rueidis.IsRedisNil(err) {
		t.Fatalf("unlock by a non-owner: %v, want nil", err)
	}
	e.W.WantHash(n, map[string]string{held.Owner(): "1"})
	ch.None()

	if err := c.Mutex(n).ForceUnlock(itest.TestCtx(t)); err != nil {
		t.Fatal(err)
	}
	e.W.WantMissing(n)
	ch.Want("0")
	if err := held.Unlock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("unlock after a force-unlock: %v, want ErrNotHeld", err)
	}
	ch.None()
	e.W.EventuallyNoneLike(n)
}

func TestRedissonMutexWireExplicitLease(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:mutex:explicit"
	m := e.Client(t).Mutex(n)
	first := itest.MustLockMutex(t, m, fairrw.WithLease(10*time.Second))
	e.W.WantPTTL(n, 10*time.Second, slack)
	second := itest.MustFurther(t, first, fairrw.Write, fairrw.WithLease(20*time.Second))
	e.W.WantPTTL(n, 20*time.Second, slack)
	itest.MustUnlock(t, second)
	itest.MustUnlock(t, first)
	e.W.WantMissing(n)
}

// TestRedissonMutexUnlockLatch: an unlock retried with the same request id
// (its first reply lost) answers as the first call did, releases one hold
// only, and publishes once.
func TestRedissonMutexUnlockLatch(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wire:mutex:latch"
	ch := itest.Listen(t, e.Raw, compat.MutexChannel(n))
	m := e.Client(t).Mutex(n)
	first := itest.MustLockMutex(t, m)
	second := itest.MustFurther(t, first, fairrw.Write)
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
		if v, ok := e.W.Get(compat.UnlockLatch(n, step.request)); !ok || v != strconv.FormatInt(step.want, 10) {
			t.Fatalf("latch %s = %q, %v; want %d", step.request, v, ok, step.want)
		}
		if step.want == 0 {
			e.W.WantHash(n, map[string]string{first.Owner(): "1"})
			ch.None()
		}
	}
	e.W.WantMissing(n)
	ch.Want("0")
	ch.None()
	for _, l := range []*fairrw.Lease{second, first} {
		if err := l.Unlock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
			t.Fatalf("Go unlock after the raw ones: %v, want ErrNotHeld", err)
		}
	}
}

// TestJavaMutexHolderBlocksGo: a Java holder (HSET and PEXPIRE of its field)
// turns Go away; its unlock (DEL, PUBLISH "0") wakes a waiting Go Lock by
// the message or the invalidation, long before the hash's PTTL.
func TestJavaMutexHolderBlocksGo(t *testing.T) {
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			e := itest.NewWireEnv(t)
			n := "interop:java-mutex:" + tr.Name
			e.W.JavaHolds(n, time.Minute, itest.JavaOwner, "1")
			c := itest.NewClient(t, e.R, tr)
			if _, err := c.Mutex(n).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("Go TryLock beside a Java holder: %v, want ErrNotAcquired", err)
			}
			got := make(chan *fairrw.Lease, 1)
			go func() {
				l, err := c.Mutex(n).Lock(itest.TestCtx(t))
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			itest.WaitSubscribers(t, e, compat.MutexChannel(n), 1)
			e.W.JavaReleases(n, compat.MutexChannel(n), compat.MutexUnlockMessage)
			select {
			case l := <-got:
				if l == nil {
					t.FailNow()
				}
				if hidden.WokenBy(l) == "timer" {
					t.Errorf("Go waiter woken by the PTTL timer, not by the Java unlock")
				}
				e.W.WantHash(n, map[string]string{l.Owner(): "1"})
				itest.MustUnlock(t, l)
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
	e := itest.NewWireEnv(t)
	const n = "interop:go-mutex"
	ch := itest.Listen(t, e.Raw, compat.MutexChannel(n))
	m := e.Client(t).Mutex(n)
	held := itest.MustLockMutex(t, m)
	javaLock := func() (int64, bool) {
		pttl, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(javaLockAcquire).Numkeys(1).
			Key(n).Arg("30000", itest.JavaOwner).Build()).AsInt64()
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
	exists, _ := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Exists().Key(n).Build()).AsInt64()
	goHeld, _ := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Hexists().Key(n).Field(held.Owner()).Build()).AsInt64()
	javaHeld, _ := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Hexists().Key(n).Field(itest.JavaOwner).Build()).AsInt64()
	count, _ := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Hget().Key(n).Field(held.Owner()).Build()).ToString()
	if exists != 1 || goHeld != 1 || javaHeld != 0 || count != "1" {
		t.Fatalf("Java's queries: isLocked %d, held by Go %d, by Java %d, Go's count %q", exists, goHeld, javaHeld, count)
	}
	itest.MustUnlock(t, held)
	ch.Want("0")

	if _, ok := javaLock(); !ok {
		t.Fatal("Java lock refused on a free mutex")
	}
	e.W.WantHash(n, map[string]string{itest.JavaOwner: "1"})
	if _, err := m.TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("Go TryLock beside a Java holder: %v, want ErrNotAcquired", err)
	}
	freed, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(javaLockUnlock).Numkeys(3).
		Key(n, compat.MutexChannel(n), compat.UnlockLatch(n, "33333333333333333333333333333333")).
		Arg("0", "30000", itest.JavaOwner, "publish", "5000").Build()).AsInt64()
	if err != nil || freed != 1 {
		t.Fatalf("Java unlock = %d, %v; want 1", freed, err)
	}
	ch.Want("0")
	itest.MustUnlock(t, itest.MustLockMutex(t, m))
}

// mutexUnlock runs fairrw's RLock unlock script raw, as owner, with
// request's latch: the owner still holds left holds, the longest with cover
// left (what fairrw passes; 0 and 0 for its last hold or for an owner that
// holds nothing).
func mutexUnlock(e itest.WireEnv, n, owner, request string, left int, cover time.Duration) rueidis.RedisResult {
	e.W.T.Helper()
	return e.Raw.Do(itest.TestCtx(e.W.T), e.Raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_lock_unlock")).Numkeys(4).
		Key(n, compat.MutexChannel(n), compat.UnlockLatch(n, request), fwire.OwnerMarker(n, owner)).
		Arg(itest.Args([]string{compat.MutexUnlockMessage, owner, "publish", "5000", "0", "5000"}, itest.Stamped(),
			[]string{strconv.Itoa(left), strconv.FormatInt(cover.Milliseconds(), 10)})...).Build())
}

// keysLike lists the keys that contain part.
func keysLike(t *testing.T, e itest.WireEnv, part string) []string {
	t.Helper()
	keys, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Keys().Pattern("*").Build()).AsStrSlice()
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
