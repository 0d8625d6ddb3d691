package locktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// acquireMutex calls Lock when wait is set, TryLock otherwise.
func acquireMutex(c context.Context, m *fairrw.Mutex, wait bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	if wait {
		return m.Lock(c, opts...)
	}
	return m.TryLock(c, opts...)
}

func lockMutex(t testing.TB, m *fairrw.Mutex, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := m.Lock(ctx(t), opts...)
	if err != nil {
		t.Fatalf("Mutex.Lock %s: %v", hidden.Name(m), err)
	}
	return l
}

// grantedMutex checks that a TryLock on m succeeds, and returns the lease.
func grantedMutex(t testing.TB, m *fairrw.Mutex) *fairrw.Lease {
	t.Helper()
	l, err := m.TryLock(ctx(t))
	if err != nil {
		t.Fatalf("Mutex.TryLock %s: %v", hidden.Name(m), err)
	}
	return l
}

// refusedMutex checks that a TryLock on m is refused with ErrNotAcquired.
func refusedMutex(t testing.TB, m *fairrw.Mutex) {
	t.Helper()
	l, err := m.TryLock(ctx(t))
	if !errors.Is(err, fairrw.ErrNotAcquired) {
		if l != nil {
			_ = l.Unlock(ctx(t))
		}
		t.Fatalf("Mutex.TryLock %s: got %v, want ErrNotAcquired", hidden.Name(m), err)
	}
}

// mutexAsync starts a Lock in the background.
func mutexAsync(c context.Context, m *fairrw.Mutex) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var r result
		r.lease, r.err = m.Lock(c)
		ch <- r
	}()
	return ch
}

// mutexHash checks the mutex's hash field by field, as Java sees it: the
// holder's field and its hold count, and no other field.
func mutexHash(t testing.TB, env Env, key string, want map[string]string) {
	t.Helper()
	got, err := env.Raw.Do(ctx(t), env.Raw.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("HGETALL %s = %v, want %v", key, got, want)
	}
}

func rawPTTL(t testing.TB, env Env, key string) time.Duration {
	t.Helper()
	n, err := env.Raw.Do(ctx(t), env.Raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return time.Duration(n) * time.Millisecond
}

func rawExists(t testing.TB, env Env, key string) bool {
	t.Helper()
	n, err := env.Raw.Do(ctx(t), env.Raw.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// rawGet returns a string key's value, "" when it is missing.
func rawGet(t testing.TB, env Env, key string) string {
	t.Helper()
	v, err := env.Raw.Do(ctx(t), env.Raw.B().Get().Key(key).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// eventuallyGone waits until key has expired (Redis expires a key at its
// PTTL on the server's clock, a little after the lease's local deadline).
func eventuallyGone(t testing.TB, env Env, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rawExists(t, env, key) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists (PTTL %v)", key, rawPTTL(t, env, key))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockState returns every key that mentions the lock name with its
// contents, to show that a refused call changed nothing. Give-up markers
// and unlock latches are left out (isMarker): they expire on their own,
// one of them in a millisecond (a give-up whose attempt was never sent),
// and a snapshot taken just before that expiry differed from the next
// with nothing changed (CI, 2026-11-28).
func lockState(t testing.TB, env Env, name string) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, k := range allKeysOf(t, env, name) {
		if isMarker(k) {
			continue
		}
		state[k] = keyContent(t, env, k)
	}
	return state
}

// keyContent returns key k's type and contents: a string's value, a
// hash's fields and a sorted set's members with their scores, sorted.
func keyContent(t testing.TB, env Env, k string) string {
	t.Helper()
	kind, err := env.Raw.Do(ctx(t), env.Raw.B().Type().Key(k).Build()).ToString()
	if err != nil {
		t.Fatalf("TYPE %s: %v", k, err)
	}
	var contents []string
	switch kind {
	case "string":
		var v string
		v, err = env.Raw.Do(ctx(t), env.Raw.B().Get().Key(k).Build()).ToString()
		contents = []string{v}
	case "hash":
		var m map[string]string
		m, err = env.Raw.Do(ctx(t), env.Raw.B().Hgetall().Key(k).Build()).AsStrMap()
		for f, v := range m {
			contents = append(contents, f+"="+v)
		}
		slices.Sort(contents)
	case "zset":
		var zs []rueidis.ZScore
		zs, err = env.Raw.Do(ctx(t), env.Raw.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
		for _, z := range zs {
			contents = append(contents, z.Member+"="+strconv.FormatFloat(z.Score, 'f', -1, 64))
		}
	}
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("reading %s (%s): %v", k, kind, err)
	}
	return kind + " " + strings.Join(contents, " ")
}

// describeKeys lists keys with their contents and PTTL: what a failure
// report needs to tell who keeps them.
func describeKeys(t testing.TB, env Env, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s (PTTL %v): %s", k, rawPTTL(t, env, k), keyContent(t, env, k))
	}
	return b.String()
}
