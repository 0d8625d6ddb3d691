package itest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// fairPolicies are the policies that grant on release.
var FairPolicies = []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()}

// forFairPolicies runs body as a subtest per fair policy, on r, with a
// lock name of its own (prefix:policy), and checks afterwards that nothing
// of the lock is left in Redis.
func ForFairPolicies(t *testing.T, r *redistest.Redis, prefix string, body func(t *testing.T, r *redistest.Redis, raw rueidis.Client, p fairrw.Policy, name string)) {
	raw := FRaw(t, r)
	for _, p := range FairPolicies {
		t.Run(p.String(), func(t *testing.T) {
			name := prefix + ":" + p.String()
			body(t, r, raw, p, name)
			EventuallyNoLockKeys(t, raw, name)
		})
	}
}

// queueWriter starts Lock(Write) on m in the background and returns its
// outcome's channel once the waiter is queued (the lock's queue grew).
func QueueWriter(t *testing.T, ctx context.Context, raw rueidis.Client, m *fairrw.RWMutex, opts ...fairrw.AcquireOption) <-chan Acquired {
	t.Helper()
	before := QueueLen(t, raw, hidden.Name(m))
	out := make(chan Acquired, 1)
	go func() {
		l, err := m.Lock(ctx, opts...)
		out <- Acquired{l, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for QueueLen(t, raw, hidden.Name(m)) <= before {
		if time.Now().After(deadline) {
			t.Fatal("the writer never queued")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return out
}

type Acquired struct {
	L   *fairrw.Lease
	Err error
}

func QueueLen(t *testing.T, raw rueidis.Client, name string) int64 {
	n, err := QueueLenOf(raw, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// queueLenOf is how many writers wait in the queue of name.
func QueueLenOf(raw rueidis.Client, name string) (int64, error) {
	return raw.Do(context.Background(), raw.B().Zcard().Key(fwire.Fair(name).Queue).Build()).AsInt64()
}

// lockKeysLeft lists the keys of name still in Redis, but for the fencing
// key (it keeps the last token for a second), the give-up markers of
// owners that gave up (they must outlive any late copy of the owner's
// attempts, and expire by themselves: checked here), and the unlock
// latches of releases that had a try fail (see KeptLatch).
func lockKeysLeft(t *testing.T, raw rueidis.Client, name string) []string {
	ctx := context.Background()
	keys, err := raw.Do(ctx, raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	marker := strings.TrimSuffix(fwire.OwnerMarker(name, "x"), "x")
	var out []string
	for _, k := range keys {
		switch {
		case !strings.Contains(k, "{"+name+"}") || k == fwire.Fence(name):
		case strings.HasPrefix(k, marker):
			if ttl, err := raw.Do(ctx, raw.B().Pttl().Key(k).Build()).AsInt64(); err == nil && ttl == -1 {
				t.Fatalf("give-up marker %s has no expiry", k)
			}
		case KeptLatch(t, raw, k):
		default:
			out = append(out, k)
		}
	}
	return out
}

// KeptLatch reports whether key is an unlock latch that a release keeps by
// design: a release one of whose tries failed (its connection cut, say)
// keeps the latch for its accept window, twice the unlock timeout, since a
// copy of that try may still reach Redis and must find the answer there.
// Such a latch must expire by itself within that window (checked here,
// for the default unlock timeout, the longest the tests use); any other
// latch is left behind.
func KeptLatch(t *testing.T, raw rueidis.Client, key string) bool {
	t.Helper()
	if !strings.HasPrefix(key, "redisson_unlock_latch:") {
		return false
	}
	ttl, err := raw.Do(context.Background(), raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil || ttl == -2 {
		return err == nil // gone meanwhile
	}
	if ttl < 0 || time.Duration(ttl)*time.Millisecond > 2*hidden.UnlockTimeout {
		t.Fatalf("unlock latch %s lives %d ms: want it to expire within the accept window (%v)", key, ttl, 2*hidden.UnlockTimeout)
	}
	return true
}

func EventuallyNoLockKeys(t *testing.T, raw rueidis.Client, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := lockKeysLeft(t, raw, name)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left behind: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func CtxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
