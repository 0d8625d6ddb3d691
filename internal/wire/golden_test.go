package wire

import (
	"slices"
	"testing"
	"time"
)

// TestRendered pins what every request sends, byte for byte: the values
// below are those fairrw sent before the requests were typed (and, for the
// Redisson formats, those Java's protocol takes, with fairrw's extra keys
// and values where the scripts document them).
func TestRendered(t *testing.T) {
	const (
		name  = "lk"
		owner = "c:7"
		base  = "fairrw:2:{lk}"
	)
	fk := Fair(name)
	sent := time.UnixMilli(1700000000123)
	call := FairCall{Name: name, Keys: fk, Policy: "phase-fair", Mode: Read, Owner: owner,
		Lease: 30 * time.Second, Queue: 20*time.Second + 1, Stamp: sent, Window: 1500 * time.Millisecond, Publish: "spublish"}
	kept := Kept{Writes: 2, WriteLeft: 10 * time.Second, Reads: []time.Duration{3 * time.Second, time.Millisecond}}
	release := Release{Name: name, Channel: "redisson_rwlock:{lk}", Owner: owner, Request: "r1", LatchTTL: 90 * time.Second,
		Publish: "publish", Abandon: true, MarkerTTL: 2500*time.Millisecond + 900*time.Microsecond, Stamp: sent, Window: 1500 * time.Millisecond, Kept: kept}
	acquire := RedissonAcquire{Name: name, Keys: fk, Owner: owner, Lease: 30 * time.Second, Stamp: sent, Window: 1500 * time.Millisecond, Further: 3}
	fairKeys := []string{base, base + ":readers", base + ":queue", base + ":waiting", base + ":admitted", base + ":fence", base + ":wake", name, "fairrw_attempt:{lk}:c:7"}
	fairArgs := []string{"phase-fair/4", "r", owner, "30005", "20006", "1700000000123", "1500", "spublish"}
	cat := func(a []string, b ...string) []string { return append(slices.Clip(a), b...) }

	for _, c := range []struct {
		name       string
		req        interface{ Render() ([]string, []string) }
		keys, args []string
	}{
		{"fair_acquire", &FairAcquire{FairCall: call, Wait: true, Further: 2, Notify: false, Reserve: 64},
			fairKeys, cat(fairArgs, "1", "2", "0", "64")},
		{"fair_acquire/no reserve", &FairAcquire{FairCall: call},
			fairKeys, cat(fairArgs, "0", "0", "0", "1")},
		{"fair_unlock", &FairUnlock{FairCall: call, Request: "r1", LatchTTL: 90 * time.Second, Abandon: false, MarkerTTL: 2500 * time.Millisecond, Kept: kept, MayRead: true, Passed: 1700000000000123, Successor: "c:8"},
			cat(fairKeys, "redisson_unlock_latch:{lk}:r1", "fairrw_attempt:{lk}:c:8"), cat(fairArgs, "90000", "0", "2500", "2", "10005", "2", "3005", "1", "1700000000000123", "c:8")},
		{"fair_unlock/nothing kept", &FairUnlock{FairCall: call, Request: "r1", LatchTTL: 90 * time.Second, MarkerTTL: 2500 * time.Millisecond},
			cat(fairKeys, "redisson_unlock_latch:{lk}:r1", "fairrw_attempt:{lk}:"), cat(fairArgs, "90000", "0", "2500", "0", "0", "0", "5", "0", "0", "")},
		{"fair_force_unlock", &FairForceUnlock{FairCall: FairCall{Name: name, Keys: fk, Policy: "writer-preferring", Mode: Write, Publish: "publish"}},
			cat(fairKeys[:8], "fairrw_attempt:{lk}:"), []string{"writer-preferring/4", "w", "", "1", "1", "0", "1", "publish"}},
		{"fair_renew", &FairRenew{Lease: 30 * time.Second, Holds: []FairRenewHold{{Keys: fk, Mode: Write, Owner: owner}, {Keys: Fair("{x}"), Mode: Read, Owner: "d:1"}}},
			[]string{base, base + ":readers", "fairrw:3:{x}", "fairrw:3:{x}:readers"}, []string{"30005", "w", owner, "r", "d:1"}},
		{"redisson_read_acquire", &RedissonReadAcquire{acquire},
			[]string{name, "{lk}:c:7:rwlock_timeout", "fairrw_attempt:{lk}:c:7", base, base + ":fence", base + ":readers"},
			[]string{"30005", owner, owner + ":write", "1700000000123", "1500", "3"}},
		{"redisson_write_acquire", &RedissonWriteAcquire{acquire},
			[]string{name, "fairrw_attempt:{lk}:c:7", base, base + ":fence", base + ":readers"},
			[]string{"30005", owner + ":write", "1700000000123", "1500", "3"}},
		{"redisson_unlock", &RedissonUnlock{Release: release, Mode: Write},
			[]string{name, "redisson_rwlock:{lk}", "{lk}:c:7:rwlock_timeout", "{lk}", "redisson_unlock_latch:{lk}:r1", "fairrw_attempt:{lk}:c:7"},
			[]string{"w", owner, owner + ":write", "publish", "90000", "1", "2500", "1700000000123", "1500", "2", "10005", "3005", "6"}},
		{"redisson_force_unlock", &RedissonForceUnlock{Name: name, Channel: "redisson_rwlock:{lk}", Mode: Write, Publish: "publish"},
			[]string{name, "redisson_rwlock:{lk}"}, []string{"write", "1", "publish"}},
		{"redisson_force_unlock/read", &RedissonForceUnlock{Name: name, Channel: "redisson_rwlock:{lk}", Mode: Read, Publish: "spublish"},
			[]string{name, "redisson_rwlock:{lk}"}, []string{"read", "0", "spublish"}},
		{"redisson_renew", &RedissonRenew{Lease: 30 * time.Second, Holds: []RedissonRenewHold{
			{Name: name, Owner: owner, Mode: Write}, {Name: name, Owner: owner, Mode: Read}, {Name: "m", Owner: owner, RLock: true}}},
			[]string{name, name, "m"},
			[]string{"30005", "w", owner + ":write", "", "r", owner, "{lk}:c:7:rwlock_timeout", "m", owner, ""}},
		{"redisson_lock_acquire", &MutexAcquire{acquire},
			[]string{name, "fairrw_attempt:{lk}:c:7", base, base + ":fence", base + ":readers"},
			[]string{"30005", owner, "1700000000123", "1500", "3"}},
		{"redisson_lock_unlock", &MutexUnlock{release},
			[]string{name, "redisson_rwlock:{lk}", "redisson_unlock_latch:{lk}:r1", "fairrw_attempt:{lk}:c:7"},
			[]string{"0", owner, "publish", "90000", "1", "2500", "1700000000123", "1500", "2", "10005"}},
		{"redisson_lock_force_unlock", &MutexForceUnlock{Name: name, Channel: "redisson_lock__channel:{lk}", Keys: fk, Publish: "publish"},
			[]string{name, "redisson_lock__channel:{lk}", base}, []string{"0", "publish"}},
		{"inspect", &Inspect{Name: name, Keys: fk, LeaseKeys: []string{"{lk}:c:7:rwlock_timeout:1"}},
			[]string{name, base, base + ":readers", base + ":queue", base + ":waiting", base + ":admitted", base + ":fence", "{lk}:c:7:rwlock_timeout:1"}, []string{}},
		{"probe", &Probe{Channel: base + ":wake", Publish: "publish", Probe: "-42"}, []string{base + ":wake"}, []string{"publish", "-42"}},
		{"fence_raise", &FenceRaise{Name: name, Token: 18446744073709551615, Lease: 30 * time.Second}, []string{base + ":fence"}, []string{"18446744073709551615", "30000"}},
	} {
		keys, args := c.req.Render()
		if !slices.Equal(keys, c.keys) {
			t.Errorf("%s: KEYS\n got %q\nwant %q", c.name, keys, c.keys)
		}
		if !slices.Equal(args, c.args) {
			t.Errorf("%s: ARGV\n got %q\nwant %q", c.name, args, c.args)
		}
	}
}
