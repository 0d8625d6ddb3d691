package fairrw

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/wire"
)

// fuzzPolicies are the policies whose key builders FuzzLockName checks.
var fuzzPolicies = []Policy{Redisson(), WriterPreferring(), PhaseFair()}

// silentRedis is a rueidis.Client that must never be used: every command
// built or sent on it is counted, and answered with an error. Mode answers
// single-node, so that New needs no command. Any other method is the nil
// embedded interface and panics, which fails the fuzz input as well.
type silentRedis struct {
	rueidis.Client
	used atomic.Int64
}

var errSilentRedis = errors.New("silentRedis: a command was sent for a refused name")

func (r *silentRedis) Mode() rueidis.ClientMode { return rueidis.ClientModeStandalone }

func (r *silentRedis) B() rueidis.Builder {
	r.used.Add(1)
	panic(errSilentRedis)
}

func (r *silentRedis) Do(context.Context, rueidis.Completed) rueidis.RedisResult {
	r.used.Add(1)
	return rueidis.NewErrorResult(errSilentRedis)
}

func (r *silentRedis) DoMulti(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	r.used.Add(1)
	res := make([]rueidis.RedisResult, len(cmds))
	for i := range res {
		res[i] = rueidis.NewErrorResult(errSilentRedis)
	}
	return res
}

func (r *silentRedis) Close() {}

// lockNameSeeds are the names every run checks, fuzzing or not.
func lockNameSeeds() []string {
	long := strings.Repeat("a", maxNameLength)
	return []string{
		"", "a", "{", "}", "{}", "}{", "{{}}", "{}{a}", "a{b}", "{a}b", "x}y", "a{b", "a}{b}",
		":", "::", "a:b", "orders:{tenant}:42", "{tenant}:lock:1", "a:{b}:c",
		"锁:订单", "{锁}:订单", "订单{", "\xff\xfe", "a\x00b", "\x00", "{\x00}", "a{\x00",
		long, long + "a", "{" + long[2:] + "}", "{" + long[1:] + "}", long[1:] + "{",
		"redisson_rwlock:{a}", "redisson_unlock_latch:{a}:x", "fairrw:{a}", "fairrw:{a}:readers",
		"fairrw_fence:{a}", "fairrw_attempt:{a}:x", "fairrw_wake:{a}", "fairrwx", "fairrw", "fairrw-lock", "{a}:owner:rwlock_timeout:1",
		"fairrw:a", "a\n{b}\r\n", "fairrw:1:{a}", "fairrw:1:{a}:fence", "{fairrw:1:{a}}", "x", "{x}", "{orders}:readers",
	}
}

// allKeys returns every key and channel that policy p passes to Redis (or
// that its scripts rebuild from what it passes) for the lock k held by
// owner, attempt and unlock request ids being id.
func allKeys(t *testing.T, p policyImpl, k *lockKeys, owner, id string) []string {
	keys := []string{k.name, k.Channel, p.unlockLatch(k, id)}
	if k.Tracked != "" {
		keys = append(keys, k.Tracked)
	}
	for _, mode := range []Mode{Read, Write} {
		rk, _ := p.renew(time.Second, []renewKey{{keys: k, owner: owner, mode: mode}})
		keys = append(keys, rk...)
	}
	switch pp := p.(type) {
	case redissonPolicy:
		// As acquire, release and forceUnlock build them.
		acq := wire.RedissonAcquire{Name: k.name, Keys: k.fair, Owner: owner}
		rel := wire.Release{Name: k.name, Channel: k.Channel, Owner: owner, Request: id}
		read, write := wire.RedissonReadAcquire{RedissonAcquire: acq}, wire.RedissonWriteAcquire{RedissonAcquire: acq}
		unlock := wire.RedissonUnlock{Release: rel}
		for _, r := range []interface{ Render() ([]string, []string) }{&read, &write, &unlock} {
			rk, _ := r.Render()
			keys = append(keys, rk...)
		}
		keys = append(keys,
			wire.OwnerMarker(k.name, owner), wire.Fair(k.name).State, wire.Fence(k.name),
			compat.LeaseKeyPrefix(k.name, owner), compat.LeaseKey(k.name, owner, 1), compat.LeaseKey(k.name, owner, 1<<30),
			compat.UnlockLatch(k.name, id), compat.Channel(k.name),
			// redisson_unlock rebuilds every owner's lease keys from
			// KEYS[4] = KeyPrefix: "<prefix>:<field>:rwlock_timeout:<k>".
			compat.KeyPrefix(k.name)+":"+owner+":rwlock_timeout:1",
			compat.KeyPrefix(k.name)+":"+compat.WriteField(owner)+":rwlock_timeout:7",
		)
	case fairPolicy:
		for _, mode := range []Mode{Read, Write} {
			acquire := wire.FairAcquire{FairCall: pp.call(k, mode, owner, time.Now(), time.Second, compat.Publish)}
			unlock := wire.FairUnlock{FairCall: acquire.FairCall, Request: id}
			force := wire.FairForceUnlock{FairCall: acquire.FairCall}
			for _, r := range []interface{ Render() ([]string, []string) }{&acquire, &unlock, &force} {
				rk, _ := r.Render()
				keys = append(keys, rk...)
			}
		}
		fk := wire.Fair(k.name)
		keys = append(keys, fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fk.Channel,
			wire.Fence(k.name), wire.OwnerMarker(k.name, owner), compat.UnlockLatch(k.name, id))
	default:
		t.Fatalf("unknown policy implementation %T", p)
	}
	return keys
}

// FuzzLockName: for any name, validation never panics; a refused name is
// refused with ErrInvalidName by every call of its handle, before anything
// is built or sent; an accepted name is non-empty, at most maxNameLength
// bytes, and every key and channel each policy derives from it hashes to
// the name's own cluster slot, deterministically.
func FuzzLockName(f *testing.F) {
	for _, s := range lockNameSeeds() {
		f.Add(s)
	}
	// One Client per policy on a Redis that must never be reached.
	type client struct {
		c   *Client
		rdb *silentRedis
	}
	var clients []client
	for _, p := range fuzzPolicies {
		rdb := &silentRedis{}
		c, err := New(WithClient(rdb), WithPolicy(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { _ = c.Close() })
		clients = append(clients, client{c, rdb})
	}
	const owner = "6b2f3a0e-8d4c-4d55-9f5e-2f0f3e1d9a77:18446744073709551615"
	f.Fuzz(func(t *testing.T, name string) {
		verdicts := make([]bool, len(fuzzPolicies))
		for i, p := range fuzzPolicies {
			impl := p.impl()
			k, err := impl.keys(name)
			k2, err2 := impl.keys(name)
			if (err == nil) != (err2 == nil) || k != k2 {
				t.Fatalf("%s: keys(%q) not deterministic: %+v, %v then %+v, %v", p, name, k, err, k2, err2)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidName) {
					t.Fatalf("%s: keys(%q) = %v, want an error wrapping ErrInvalidName", p, name, err)
				}
				if len(err.Error()) > 4*maxNameLength+200 {
					t.Fatalf("%s: error message of %d bytes for a name of %d", p, len(err.Error()), len(name))
				}
				refusedHandle(t, clients[i].c, clients[i].rdb, name)
				continue
			}
			verdicts[i] = true
			if name == "" || len(name) > maxNameLength {
				t.Fatalf("%s: accepted a name of %d bytes", p, len(name))
			}
			if k.name != name || k.slot != slot.Of(name) {
				t.Fatalf("%s: keys(%q) = name %q slot %d, want the name and its slot %d", p, name, k.name, k.slot, slot.Of(name))
			}
			want := slot.Of(name)
			for _, id := range []string{"0123456789abcdef0123456789abcdef", newRequestID()} {
				for _, key := range allKeys(t, impl, &k, owner, id) {
					if got := slot.Of(key); got != want {
						t.Fatalf("%s: name %q accepted, but its key %q hashes to slot %d, not the name's %d", p, name, key, got, want)
					}
				}
			}
			m := clients[i].c.RWMutex(name)
			if m.err != nil || m.lockName() != name {
				t.Fatalf("%s: RWMutex(%q): name %q, err %v", p, name, m.lockName(), m.err)
			}
			// A release's id and latch, built in one string, are those the
			// policy names.
			if id, latch := m.newUnlockRequest(); len(id) != 32 || latch != impl.unlockLatch(&m.keys, id) {
				t.Fatalf("%s: unlock request %q, latch %q; want 32 hex digits and %q", p, id, latch, impl.unlockLatch(&m.keys, id))
			}
		}
		// The two fair policies build the same keys: they must agree.
		if verdicts[1] != verdicts[2] {
			t.Fatalf("%q: writer-preferring accepts %v, phase-fair %v", name, verdicts[1], verdicts[2])
		}
		if name == "" || len(name) > maxNameLength {
			for i, ok := range verdicts {
				if ok {
					t.Fatalf("%s accepted a name of %d bytes", fuzzPolicies[i], len(name))
				}
			}
			return
		}
		// And no name the brace rule can keep in one slot is refused: one
		// with a hash tag of its own, or one with no brace at all, unless it
		// starts like fairrw's own keys.
		// fairrw's own key prefixes are refused (reservedName).
		tagged := strings.Contains(name, "{") && slot.Tag(name) != name
		if (tagged || !strings.ContainsAny(name, "{}")) && !reservedName(name) {
			for i, ok := range verdicts {
				if !ok {
					t.Fatalf("%s refused %q, whose keys all share its slot", fuzzPolicies[i], name)
				}
			}
		}
	})
}

// refusedHandle checks that every call on a handle of a refused name
// returns ErrInvalidName and sends nothing.
func refusedHandle(t *testing.T, c *Client, rdb *silentRedis, name string) {
	t.Helper()
	before := rdb.used.Load()
	m := c.RWMutex(name)
	if !errors.Is(m.err, ErrInvalidName) {
		t.Fatalf("RWMutex(%q).err = %v, want ErrInvalidName", name, m.err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"Lock":     func() error { _, err := m.Lock(ctx); return err },
		"RLock":    func() error { _, err := m.RLock(ctx); return err },
		"TryLock":  func() error { _, err := m.TryLock(ctx); return err },
		"TryRLock": func() error { _, err := m.TryRLock(ctx); return err },
		"ForceUnlock(Read)": func() error {
			return m.ForceUnlock(ctx, Read)
		},
		"ForceUnlock(Write)": func() error {
			return m.ForceUnlock(ctx, Write)
		},
		// Option errors must not hide the name's.
		"TryLock(WithLease(-1))": func() error { _, err := m.TryLock(ctx, WithLease(-1)); return err },
	}
	for op, call := range calls {
		if err := call(); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("%s on %q: %v, want ErrInvalidName", op, name, err)
		}
	}
	if n := rdb.used.Load() - before; n != 0 {
		t.Fatalf("%d commands built or sent for the refused name %q", n, name)
	}
}
