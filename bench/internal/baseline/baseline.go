// Package baseline holds the bare Lua script pairs that lock+unlock cycles
// are measured against: two script calls per cycle, as a lock has, with
// next to nothing in them. What a lock costs the server over a pair is what
// its own logic costs.
//
// LuaPair is the shape of Redisson's lock and of a minimal reentrant lock
// (a hash per lock, a field per owner, a PUBLISH on release): the baseline
// the fair policies' ratios are taken against. EvalshaPair is the barest
// pair of all (one SET, one DEL), the baseline of the older uncontended
// benchmark. Neither is a lock: the lock script does not check for another
// owner, so a pair is measured uncontended only (each caller on its own
// key).
package baseline

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

// Pair is two scripts run one after the other on one key: one cycle.
type Pair struct {
	// Name is short and stable, for benchmark names and reports.
	Name string
	// About says what the scripts run, in one line.
	About string
	// Commands is the Redis commands the two scripts run per cycle (as INFO
	// commandstats counts them, the script calls not included).
	Commands int

	lock, unlock *rueidis.Lua
	keys         func(key string) []string
	lockArgs     []string
	unlockArgs   []string
	// unlockKeys is how many of the keys, from the first, the unlock
	// script takes (0: all of them).
	unlockKeys int
	// split, when set, parts the keys instead: the lock script takes
	// keys[:split], the unlock script keys[split:] (a layout whose two
	// scripts name different keys; see floors.go).
	split int
	// cleanup is the index of a key deleted by a DEL of its own after the
	// unlock, as fairrw's janitor deletes a release's latch (-1: none).
	cleanup int
	// held is the unlock script's reply when it released something.
	held int64
}

var (
	// LuaPair: HGET, HSET, PEXPIRE, then HEXISTS, DEL, PUBLISH. The unlock
	// publishes to a channel of its own, which nobody subscribes to (no
	// waiter in an uncontended cycle), as a lock's release does.
	LuaPair = &Pair{
		Name:     "lua-pair",
		About:    "HGET, HSET, PEXPIRE; then HEXISTS, DEL, PUBLISH (Redisson's shape, no logic)",
		Commands: 6,
		lock: rueidis.NewLuaScript(`
local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or 0)
redis.call('hset', KEYS[1], ARGV[1], n + 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return 1`),
		unlock: rueidis.NewLuaScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[2])
return 1`),
		// One hash tag: rueidis refuses a script's keys of two slots.
		keys:       func(key string) []string { return []string{"{" + key + "}", "{" + key + "}:channel"} },
		lockArgs:   []string{"owner", "30000"},
		unlockArgs: []string{"owner", "0"},
		held:       1,
		cleanup:    -1,
	}
	// EvalshaPair: SET, then DEL, each in a script of its own.
	EvalshaPair = &Pair{
		Name:       "evalsha-pair",
		About:      "SET; then DEL (the barest two script calls)",
		Commands:   2,
		lock:       rueidis.NewLuaScript("return redis.call('set', KEYS[1], ARGV[1])"),
		unlock:     rueidis.NewLuaScript("return redis.call('del', KEYS[1])"),
		keys:       func(key string) []string { return []string{key} },
		lockArgs:   []string{"1"},
		unlockArgs: nil,
		held:       1,
		cleanup:    -1,
	}
	// FastPathFloor is the fair policies' uncontended write cycle reduced
	// to what Redis cannot be spared by cutting Lua: the commands their
	// fast path runs (lua/fair_acquire_fast.lua, lua/fair_unlock_fast.lua),
	// with the same number of keys and values sent, of the same lengths,
	// and only the Lua that builds those commands' arguments; then the DEL
	// of the release's latch that fairrw's janitor sends. What the fair
	// policies cost over it is their own Lua (its checks and branches);
	// what it costs over LuaPair is the design: the probes of the keys a
	// contended lock keeps, the server's clock, the fencing token, the
	// release's latch, and the keys and values a call must name.
	FastPathFloor = &Pair{
		Name:     "fast-path-floor",
		About:    "the fair fast path's commands, keys and values with no logic: EXISTS of 7 keys, TIME, SET GET, HSET of 6 fields, PEXPIREAT; then HMGET, DEL, SET NX; then DEL",
		Commands: 9,
		lock:     floorAcquire("KEYS[1], KEYS[8], KEYS[9], KEYS[2], KEYS[4], KEYS[5], KEYS[6]", "KEYS[7]"),
		unlock: rueidis.NewLuaScript(`
redis.call('hmget', KEYS[1], 'writer', 'wdeadline', 'horizon', 'busy')
redis.call('del', KEYS[1])
redis.call('set', KEYS[3], '1', 'px', ARGV[3], 'nx')
return 1`),
		// In the fast path's order, its unlock's three first: the state,
		// the readers, the latch; then the queue, the waiting readers, the
		// admitted readers, the fence, the Redisson hash, the marker. As
		// fairrw names them (lengths included), under one hash tag.
		keys: func(key string) []string {
			b := "fairrw:" + fmt.Sprint(len(key)) + ":{" + key + "}"
			return []string{b, b + ":readers", "redisson_unlock_latch:{" + key + "}:c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17",
				b + ":queue", b + ":waiting", b + ":admitted", b + ":fence", "{" + key + "}", "fairrw_attempt:{" + key + "}:c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17"}
		},
		lockArgs: []string{"writer-preferring/3", "w", "c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17", "30005", "30005",
			"1764115200123", "1500", "publish", "1", "0", "0"},
		unlockArgs: []string{"w", "c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17", "5000"},
		unlockKeys: 3,
		cleanup:    2,
		held:       1,
	}
)

// Pairs returns every pair, LuaPair (the reference of the ratios) first.
func Pairs() []*Pair { return []*Pair{LuaPair, EvalshaPair, FastPathFloor, RedissonJavaPair} }

// Keys returns the KEYS of key's cycle. Compute them once per key: Cycle
// then allocates nothing for them, as a lock handle would not.
func (p *Pair) Keys(key string) []string { return p.keys(key) }

// Cycle runs the lock script, then the unlock script, on keys (from Keys).
// It fails if the unlock found nothing to release: the key was shared or
// had expired, and the cycle was not the uncontended one it stands for.
func (p *Pair) Cycle(ctx context.Context, rdb rueidis.Client, keys []string) error {
	lkeys, ukeys := keys, keys
	switch {
	case p.split > 0:
		lkeys, ukeys = keys[:p.split], keys[p.split:]
	case p.unlockKeys > 0:
		ukeys = keys[:p.unlockKeys]
	}
	// nil is a grant in Redisson's convention (RedissonJavaPair); a
	// refusal shows in the unlock, which then releases nothing.
	if err := p.lock.Exec(ctx, rdb, lkeys, p.lockArgs).Error(); err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("%s lock: %w", p.Name, err)
	}
	n, err := p.unlock.Exec(ctx, rdb, ukeys, p.unlockArgs).AsInt64()
	if err != nil {
		return fmt.Errorf("%s unlock: %w", p.Name, err)
	}
	if n != p.held {
		return fmt.Errorf("%s unlock of %s: released nothing (the key is shared or expired)", p.Name, keys[0])
	}
	if p.cleanup >= 0 {
		if err := rdb.Do(ctx, rdb.B().Del().Key(keys[p.cleanup]).Build()).Error(); err != nil {
			return fmt.Errorf("%s cleanup: %w", p.Name, err)
		}
	}
	return nil
}
