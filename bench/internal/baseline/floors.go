package baseline

import (
	"fmt"

	"github.com/redis/rueidis"
)

// The floors of other layouts of the fair policies' uncontended cycle:
// FastPathFloor's commands with fewer keys and values named, or fewer
// keys, measured side by side before a layout is chosen (issue 35). Like
// FastPathFloor, each runs a layout's commands with no logic; what it
// leaves out is what that layout would not send. None is a lock.
var (
	// LeanFloor is FastPathFloor with an acquire script of its own: the
	// keys and values its commands use and nothing for the full script
	// (no wake-up channel, no queue lease, publish command, queue-up flag,
	// further count or notify flag): 8 keys and 7 values where
	// FastPathFloor sends 9 and 11.
	LeanFloor = &Pair{
		Name:     "lean-floor",
		About:    "FastPathFloor's commands, its acquire naming 8 keys and 7 values (no key or value of the full script's)",
		Commands: 9,
		lock:     floorAcquire("KEYS[1], KEYS[7], KEYS[8], KEYS[2], KEYS[3], KEYS[4], KEYS[5]", "KEYS[6]"),
		unlock:   fastUnlockFloor,
		// S, R, Q, W, A, F, X, M; then the release's S, R, latch.
		keys: func(key string) []string {
			b, x, m, latch := floorNames(key)
			return []string{b, b + ":readers", b + ":queue", b + ":waiting", b + ":admitted", b + ":fence", x, m, b, b + ":readers", latch}
		},
		lockArgs:   leanArgs,
		unlockArgs: fastUnlockArgs,
		split:      8,
		cleanup:    10,
		held:       1,
	}
	// GuardFloor is LeanFloor where the state hash outlives the queue and
	// the phase-fair keys, so that the acquire probes only the state, the
	// readers, the Redisson hash and the give-up marker: 5 keys and 7
	// values.
	GuardFloor = &Pair{
		Name:     "guard-floor",
		About:    "LeanFloor's commands, its acquire naming 5 keys (S, R, F, X, M) and 7 values, EXISTS of 4",
		Commands: 9,
		lock:     floorAcquire("KEYS[1], KEYS[4], KEYS[5], KEYS[2]", "KEYS[3]"),
		unlock:   fastUnlockFloor,
		keys: func(key string) []string {
			b, x, m, latch := floorNames(key)
			return []string{b, b + ":readers", b + ":fence", x, m, b, b + ":readers", latch}
		},
		lockArgs:   leanArgs,
		unlockArgs: fastUnlockArgs,
		split:      5,
		cleanup:    7,
		held:       1,
	}
	// OneKeyFloor is the layout of one hash per lock: the state hash
	// carries the last fencing token and the release's answer, and stays
	// after a release as a tombstone of those two for the latch's
	// lifetime. The acquire names S, the Redisson hash and the give-up
	// marker (3 keys, 7 values); the release S alone (1 key, 4 values),
	// and no latch key is left for a janitor to delete.
	OneKeyFloor = &Pair{
		Name:     "one-key-floor",
		About:    "one hash per lock: EXISTS of 2, HMGET, TIME, HSET of 7 fields, PEXPIREAT; then HMGET, DEL, HSET of 2, PEXPIRE",
		Commands: 9,
		lock: rueidis.NewLuaScript(`
redis.call('exists', KEYS[2], KEYS[3])
redis.call('hmget', KEYS[1], 'policy', 'writer', 'fence')
local t = redis.call('time')
local text = t[1] .. string.sub('00000', #t[2]) .. t[2]
local d = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[4]))
redis.call('hset', KEYS[1], 'policy', ARGV[1], 'writer', ARGV[3], 'wcount', '1', 'wdeadline', d, 'wtoken', text, 'horizon', d, 'fence', text)
redis.call('pexpireat', KEYS[1], d)
return tonumber(text)`),
		unlock: rueidis.NewLuaScript(`
local v = redis.call('hmget', KEYS[1], 'writer', 'wdeadline', 'horizon', 'busy', 'fence', 'l:' .. ARGV[3])
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], 'fence', v[5], 'l:' .. ARGV[3], '1')
redis.call('pexpire', KEYS[1], ARGV[4])
return 1`),
		keys: func(key string) []string {
			b, x, m, _ := floorNames(key)
			return []string{b, x, m, b}
		},
		lockArgs:   leanArgs,
		unlockArgs: []string{"w", floorOwner, floorOwner, "5000"},
		split:      3,
		cleanup:    -1,
		held:       1,
	}
	// Exists3Floor is FastPathFloor whose acquire probes only the state,
	// the Redisson hash and the give-up marker (EXISTS of 3 keys where it
	// has 7), naming the same 9 keys and 11 values: the layout where the
	// state hash outlives every entry of the readers, the queue and the
	// phase-fair keys, so that its absence implies theirs.
	Exists3Floor = fastPathVariant("exists3-floor",
		"FastPathFloor with EXISTS of 3 keys (S, X, M): the same keys and values named", 9,
		floorAcquire("KEYS[1], KEYS[8], KEYS[9]", "KEYS[7]"))
	// NoFenceFloor is FastPathFloor without the fence's SET GET: what the
	// fencing token's key costs, by difference.
	NoFenceFloor = fastPathVariant("no-fence-floor",
		"FastPathFloor without the SET GET of the fence: EXISTS of 7, TIME, HSET, PEXPIREAT", 8,
		floorAcquire("KEYS[1], KEYS[8], KEYS[9], KEYS[2], KEYS[4], KEYS[5], KEYS[6]", ""))
	// Lean4Floor is Exists3Floor with an acquire script of its own naming
	// only what its commands use: S, F, X, M (4 keys) and 7 values.
	Lean4Floor = &Pair{
		Name:     "lean4-floor",
		About:    "Exists3Floor's commands, its acquire naming 4 keys (S, F, X, M) and 7 values",
		Commands: 9,
		lock:     floorAcquire("KEYS[1], KEYS[3], KEYS[4]", "KEYS[2]"),
		unlock:   fastUnlockFloor,
		keys: func(key string) []string {
			b, x, m, latch := floorNames(key)
			return []string{b, b + ":fence", x, m, b, b + ":readers", latch}
		},
		lockArgs:   leanArgs,
		unlockArgs: fastUnlockArgs,
		split:      4,
		cleanup:    6,
		held:       1,
	}
	// RenameFloor is the lean write cycle designed for issue 35
	// (bench/RESULTS.md, "The next step for issue 35"): the acquire probes
	// S, R, the Redisson hash X, the give-up marker M and the fence F, and
	// writes S alone (no fence write: the token is the clock); the release
	// reads S and renames it to M, the owner's give-up marker, which
	// answers a retried release and refuses late copies, so that no latch
	// is written or deleted. 6 commands; 5 keys and 6 values, then 2 keys
	// and 2 values.
	RenameFloor = &Pair{
		Name:     "rename-floor",
		About:    "EXISTS of 5 (S, R, X, M, F), TIME, HSET of 6 fields, PEXPIREAT; then HMGET, RENAME S to the give-up marker (no fence write, no latch)",
		Commands: 6,
		lock:     floorAcquire("KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]", ""),
		unlock: rueidis.NewLuaScript(`
redis.call('hmget', KEYS[1], 'writer', 'wdeadline', 'horizon', 'busy')
redis.call('rename', KEYS[1], KEYS[2])
return 1`),
		keys: func(key string) []string {
			b, x, m, _ := floorNames(key)
			return []string{b, b + ":readers", x, m, b + ":fence", b, m}
		},
		lockArgs:   leanArgs[:6],
		unlockArgs: []string{"w", floorOwner},
		split:      5,
		cleanup:    -1,
		held:       1,
	}
	// NoLatchFloor is FastPathFloor without the release's latch: no SET
	// NX, and so no DEL of it afterwards. What a retried release needs, by
	// difference.
	NoLatchFloor = &Pair{
		Name:     "no-latch-floor",
		About:    "FastPathFloor without the latch: its release HMGET, DEL only, and no janitor DEL",
		Commands: 7,
		lock:     FastPathFloor.lock,
		unlock: rueidis.NewLuaScript(`
redis.call('hmget', KEYS[1], 'writer', 'wdeadline', 'horizon', 'busy')
redis.call('del', KEYS[1])
return 1`),
		keys:       FastPathFloor.keys,
		lockArgs:   FastPathFloor.lockArgs,
		unlockArgs: []string{"w", floorOwner},
		unlockKeys: 2,
		cleanup:    -1,
		held:       1,
	}
)

// Floors returns FastPathFloor and the floors of the other layouts.
func Floors() []*Pair {
	return []*Pair{FastPathFloor, Exists3Floor, NoFenceFloor, LeanFloor, Lean4Floor, GuardFloor, OneKeyFloor, NoLatchFloor, RenameFloor}
}

// floorOwner is an owner (and a request id) as fairrw writes them.
const floorOwner = "c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17"

var (
	// leanArgs: policy and protocol, mode, owner, lease, stamp, window,
	// tokens reserved.
	leanArgs = []string{"writer-preferring/3", "w", floorOwner, "30005", "1764115200123", "1500", "1"}
	// fastUnlockArgs: lua/fair_unlock_fast.lua's mode, owner, latch
	// lifetime.
	fastUnlockArgs  = []string{"w", floorOwner, "5000"}
	fastUnlockFloor = rueidis.NewLuaScript(`
redis.call('hmget', KEYS[1], 'writer', 'wdeadline', 'horizon', 'busy')
redis.call('del', KEYS[1])
redis.call('set', KEYS[3], '1', 'px', ARGV[3], 'nx')
return 1`)
)

// floorAcquire is a floor's write acquire: EXISTS of probe (KEYS
// positions), TIME, the fence's SET GET at fence ("": none), then the
// state hash KEYS[1]'s HSET of 6 fields and PEXPIREAT, as the fair fast
// path runs them (ARGV as leanArgs or FastPathFloor's: policy, mode,
// owner, lease first).
func floorAcquire(probe, fence string) *rueidis.Lua {
	set := ""
	if fence != "" {
		set = "redis.call('set', " + fence + ", text, 'px', '1000', 'get')\n"
	}
	return rueidis.NewLuaScript(`
redis.call('exists', ` + probe + `)
local t = redis.call('time')
local text = t[1] .. string.sub('00000', #t[2]) .. t[2]
` + set + `local d = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[4]))
redis.call('hset', KEYS[1], 'policy', ARGV[1], 'writer', ARGV[3], 'wcount', '1', 'wdeadline', d, 'wtoken', text, 'horizon', d)
redis.call('pexpireat', KEYS[1], d)
return tonumber(text)`)
}

// fastPathVariant is FastPathFloor with another acquire (lock, running
// commands commands per cycle with the release and the latch's DEL): the
// same keys, values and release.
func fastPathVariant(name, about string, commands int, lock *rueidis.Lua) *Pair {
	p := *FastPathFloor
	p.Name, p.About, p.Commands, p.lock = name, about, commands, lock
	return &p
}

// floorNames returns the state hash, the Redisson hash, the give-up marker
// and a release's latch of key, as fairrw names them.
func floorNames(key string) (state, redisson, marker, latch string) {
	state = "fairrw:" + fmt.Sprint(len(key)) + ":{" + key + "}"
	return state, "{" + key + "}", "fairrw_attempt:{" + key + "}:" + floorOwner, "redisson_unlock_latch:{" + key + "}:" + floorOwner
}
