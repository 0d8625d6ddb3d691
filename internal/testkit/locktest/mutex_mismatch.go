package locktest

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// MutexPolicyMismatch: a name is a mutex or a read-write lock (env.Policy),
// never both at once. Held as one, every call as the other (acquires,
// waiting or not, and ForceUnlock) fails and changes nothing in Redis; once
// released, the name is free for either.
func MutexPolicyMismatch(t *testing.T, env Env) {
	c := env.client(t)
	n := name(t)

	held := lockMutex(t, c.Mutex(n))
	keepFence(t, env, n)
	before := lockState(t, env, n)
	for _, wait := range []bool{false, true} {
		for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
			l, err := Acquire(ctx(t), c.RWMutex(n), mode, wait)
			if !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if l != nil {
					_ = l.Unlock(ctx(t))
				}
				t.Fatalf("%s (wait %v) under %s on a held mutex: %v, want ErrPolicyMismatch", mode, wait, env.Policy, err)
			}
			if !strings.Contains(err.Error(), "redisson-mutex") {
				t.Fatalf("mismatch error %q does not name the mutex's policy \"redisson-mutex\"", err)
			}
		}
	}
	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
		// A read-write lock's force-unlock finds no lock of its own there.
		if err := c.RWMutex(n).ForceUnlock(ctx(t), mode); err == nil {
			t.Fatalf("%s force-unlock under %s freed a mutex", mode, env.Policy)
		}
	}
	wantState(t, env, n, before)
	alive(t, held)
	unlock(t, held)
	EventuallyNoKeys(t, env, n)

	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
		rw := lock(t, c.RWMutex(n), mode)
		keepFence(t, env, n)
		before := lockState(t, env, n)
		for _, wait := range []bool{false, true} {
			l, err := acquireMutex(ctx(t), c.Mutex(n), wait)
			if !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if l != nil {
					_ = l.Unlock(ctx(t))
				}
				t.Fatalf("mutex (wait %v) on a %s lock held under %s: %v, want ErrPolicyMismatch", wait, mode, env.Policy, err)
			}
			if !strings.Contains(err.Error(), "policy "+env.Policy.String()) {
				t.Fatalf("mismatch error %q does not name the holder's policy %q", err, env.Policy)
			}
		}
		// The mutex's force-unlock refuses a read-write lock: a Redisson
		// one's hash (Java's RLock would delete it) or a fair policy's state.
		if err := c.Mutex(n).ForceUnlock(ctx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
			t.Fatalf("mutex ForceUnlock of a %s lock held under %s: %v, want ErrPolicyMismatch", mode, env.Policy, err)
		}
		wantState(t, env, n, before)
		alive(t, rw)
		unlock(t, rw)
		EventuallyNoKeys(t, env, n)
	}

	unlock(t, grantedMutex(t, c.Mutex(n)))
	EventuallyNoKeys(t, env, n)
}

// keepFence keeps the lock's last fencing token 10 s (within the TTL that
// EventuallyNoKeys allows it). The token is kept
// a second past Redis's clock reaching it (tokens follow the clock): on a
// loaded machine the calls between two snapshots of the state outlast
// that, and the key would expire by itself, which no call did.
func keepFence(t testing.TB, env Env, name string) {
	t.Helper()
	for _, k := range allKeysOf(t, env, name) {
		if strings.HasSuffix(k, ":fence") {
			if err := env.Raw.Do(ctx(t), env.Raw.B().Pexpire().Key(k).Milliseconds((10 * time.Second).Milliseconds()).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// wantState checks that the lock's keys hold what they held before.
func wantState(t testing.TB, env Env, name string, before map[string]string) {
	t.Helper()
	if after := lockState(t, env, name); !maps.Equal(before, after) {
		t.Fatalf("state of %s changed:\nbefore %v\nafter  %v", name, before, after)
	}
}
