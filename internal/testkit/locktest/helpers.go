package locktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/wire"
)

// Acquire calls the acquire of mode on m: Lock or RLock when wait is set,
// TryLock or TryRLock otherwise.
func Acquire(c context.Context, m *fairrw.RWMutex, mode fairrw.Mode, wait bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case mode == fairrw.Read && wait:
		return m.RLock(c, opts...)
	case mode == fairrw.Read:
		return m.TryRLock(c, opts...)
	case wait:
		return m.Lock(c, opts...)
	default:
		return m.TryLock(c, opts...)
	}
}

func lock(t testing.TB, m *fairrw.RWMutex, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := Acquire(ctx(t), m, mode, true, opts...)
	if err != nil {
		t.Fatalf("%s %s: %v", mode, hidden.Name(m), err)
	}
	return l
}

func unlock(t testing.TB, l *fairrw.Lease) {
	t.Helper()
	if err := l.Unlock(ctx(t)); err != nil {
		t.Fatalf("unlock %s %s: %v", hidden.Mode(l), hidden.Name(l), err)
	}
}

// refused checks that a try of mode on m is refused with ErrNotAcquired.
func refused(t testing.TB, m *fairrw.RWMutex, mode fairrw.Mode) {
	t.Helper()
	l, err := Acquire(ctx(t), m, mode, false)
	if !errors.Is(err, fairrw.ErrNotAcquired) {
		if l != nil {
			_ = l.Unlock(ctx(t))
		}
		t.Fatalf("Try %s on %s: got %v, want ErrNotAcquired", mode, hidden.Name(m), err)
	}
}

// granted checks that a try of mode on m succeeds, and returns the lease.
func granted(t testing.TB, m *fairrw.RWMutex, mode fairrw.Mode) *fairrw.Lease {
	t.Helper()
	l, err := Acquire(ctx(t), m, mode, false)
	if err != nil {
		t.Fatalf("Try %s on %s: %v", mode, hidden.Name(m), err)
	}
	return l
}

// keysOf lists the keys in Redis that mention the lock name, but for the
// two that outlive a hold by design, each checked to have a TTL: the last
// fencing token (kept for a lease, so that tokens keep increasing across
// holders), and the marker of an owner that was given up (a Lock cancelled
// while an attempt was in flight leaves one, so that a late copy of that
// attempt takes nothing; it expires after three unlock timeouts). The
// Redisson format's marker is an unlock latch (compat.UnlockLatch), as
// Java's lock leaves: checked the same way.
func keysOf(t testing.TB, env Env, name string) []string {
	t.Helper()
	var out []string
	for _, k := range allKeysOf(t, env, name) {
		fence := strings.HasPrefix(k, wire.FairPrefix+":") && strings.HasSuffix(k, ":fence")
		if fence || isMarker(k) {
			checkMarkerTTL(t, env, k)
			continue
		}
		out = append(out, k)
	}
	return out
}

// checkMarkerTTL fails t unless k (a last token, a marker or a latch)
// expires within a lease or three unlock timeouts.
func checkMarkerTTL(t testing.TB, env Env, k string) {
	t.Helper()
	pttl, _ := env.Raw.Do(ctx(t), env.Raw.B().Pttl().Key(k).Build()).AsInt64()
	if pttl == -1 || pttl > int64(3*hidden.UnlockTimeout/time.Millisecond) && pttl > int64(hidden.LeaseTime/time.Millisecond) {
		t.Fatalf("%s has PTTL %d, want a TTL no longer than a lease or three unlock timeouts", k, pttl)
	}
}

// isMarker reports whether k is an owner's give-up marker or an unlock
// latch (the Redisson format's marker is one): keys that expire on their
// own, within three unlock timeouts.
func isMarker(k string) bool {
	return strings.HasPrefix(k, wire.OwnerMarkerPrefix+":") || strings.HasPrefix(k, compat.UnlockLatchPrefix+":")
}

// allKeysOf lists every key in Redis that mentions the lock name.
func allKeysOf(t testing.TB, env Env, name string) []string {
	t.Helper()
	var all []string
	if env.Keys != nil {
		all = env.Keys(t)
	} else {
		var err error
		if all, err = env.Raw.Do(ctx(t), env.Raw.B().Keys().Pattern("*").Build()).AsStrSlice(); err != nil {
			t.Fatalf("KEYS: %v", err)
		}
	}
	var out []string
	for _, k := range all {
		if strings.Contains(k, name) {
			out = append(out, k)
		}
	}
	return out
}

// EventuallyNoKeys waits until no key of the lock is left (unlock latches are
// deleted in the background right after the unlock answers).
func EventuallyNoKeys(t testing.TB, env Env, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		keys := keysOf(t, env, name)
		if len(keys) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left behind for %s: %s", name, describeKeys(t, env, keys))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDone waits for a lease to end, at most d, and returns its error.
func waitDone(t testing.TB, l *fairrw.Lease, d time.Duration) error {
	t.Helper()
	select {
	case <-l.Done():
		return l.Err()
	case <-time.After(d):
		t.Fatalf("lease on %s still alive after %v", hidden.Name(l), d)
		return nil
	}
}

func alive(t testing.TB, l *fairrw.Lease) {
	t.Helper()
	select {
	case <-l.Done():
		t.Fatalf("lease on %s ended: %v", hidden.Name(l), l.Err())
	default:
	}
}

// acquireAsync starts an acquire in the background.
func acquireAsync(c context.Context, m *fairrw.RWMutex, mode fairrw.Mode, opts ...fairrw.AcquireOption) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var r result
		r.lease, r.err = Acquire(c, m, mode, true, opts...)
		ch <- r
	}()
	return ch
}

type result struct {
	lease *fairrw.Lease
	err   error
}

// blocked checks that an acquire has not returned yet, after giving it time
// to (wrongly) get through.
func blocked(t testing.TB, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("acquire returned while it should wait: %v %v", r.lease, r.err)
	case <-time.After(100 * time.Millisecond):
	}
}

func receive(t testing.TB, ch <-chan result) *fairrw.Lease {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("acquire: %v", r.err)
		}
		return r.lease
	case <-time.After(20 * time.Second):
		t.Fatal("acquire did not return")
		return nil
	}
}

// Policies returns every policy, in the order tests report them: Redisson,
// writer-preferring, phase-fair.
func Policies() []fairrw.Policy {
	return []fairrw.Policy{fairrw.Redisson(), fairrw.WriterPreferring(), fairrw.PhaseFair()}
}

// PolicyByName returns the policy whose String is name.
func PolicyByName(name string) (fairrw.Policy, error) {
	for _, p := range Policies() {
		if p.String() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown policy %q", name)
}

// further takes a further hold of mode for the owner of l: Lease.Lock or
// Lease.RLock.
func further(c context.Context, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	if mode == fairrw.Write {
		return l.Lock(c, opts...)
	}
	return l.RLock(c, opts...)
}

// hold takes a further hold of mode for the owner of l, failing the test on
// an error, and checks that it is the same owner's.
func hold(t testing.TB, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	nl, err := further(ctx(t), l, mode, opts...)
	if err != nil {
		t.Fatalf("further %s from a %s lease on %s: %v", mode, hidden.Mode(l), hidden.Name(l), err)
	}
	checkFurther(t, l, nl, mode)
	return nl
}

// checkFurther fails t unless nl, a further hold of mode from l, has l's
// owner and name.
func checkFurther(t testing.TB, l, nl *fairrw.Lease, mode fairrw.Mode) {
	t.Helper()
	if nl.Owner() != l.Owner() || hidden.Mode(nl) != mode || hidden.Name(nl) != hidden.Name(l) {
		t.Fatalf("further %s: owner %s mode %s name %s, want %s %s %s", mode, nl.Owner(), hidden.Mode(nl), hidden.Name(nl), l.Owner(), mode, hidden.Name(l))
	}
}

// EventuallyNothing waits until no key that mentions the lock name is left
// at all, not even one with a TTL: once every hold has ended and its lease
// has passed, nothing of a name stays in Redis. But for an owner's give-up
// marker, which lives on for the give-up window: an acquire whose grant
// was answered after its lease ran out (a loaded machine) gave its owner
// up, so that no late copy of its attempts takes the lock; the marker's
// TTL is checked as keysOf does.
func EventuallyNothing(t testing.TB, env Env, name string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var keys []string
		for _, k := range allKeysOf(t, env, name) {
			if strings.HasPrefix(k, wire.OwnerMarkerPrefix+":") {
				checkMarkerTTL(t, env, k)
				continue
			}
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys of %s still exist after %v: %s", name, within, describeKeys(t, env, keys))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
