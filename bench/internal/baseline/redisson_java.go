package baseline

import "github.com/redis/rueidis"

// RedissonJavaPair is Java Redisson's own write lock and write unlock of
// an RReadWriteLock, as Redisson 4.x runs them on the server (the steps of
// ../shared/docs/redisson-protocol.md, "Write acquire" and "Write unlock",
// written here from that page, with their logic): the write acquire's
// HGET of the mode, two HSETs (mode, then the owner's write field) and
// PEXPIRE; the write unlock's GET of its latch, HGET of the mode, HEXISTS
// and HINCRBY of the write field, HDEL, HLEN, DEL, PUBLISH of "1" and SET
// of the latch; then the DEL of the latch that Java sends after every
// unlock. The keys and values are named as Java names them (the hash N,
// the channel "redisson_rwlock:{N}", the latch
// "redisson_unlock_latch:{N}:<32 hex>"). It is the reference of fairrw's
// Redisson policy (issue 35: its Redis CPU per uncontended write cycle
// over Java's own), which writes the same hash and adds what Java does
// not have: the fencing token, the server's clock for the staleness rule,
// the probe of the fair policies' keys and the owner's give-up marker.
var RedissonJavaPair = &Pair{
	Name:     "redisson-java",
	About:    "Java Redisson's write lock (HGET, HSET, HSET, PEXPIRE) and write unlock (GET, HGET, HEXISTS, HINCRBY, HDEL, HLEN, DEL, PUBLISH, SET), then Java's DEL of the latch",
	Commands: 14,
	lock: rueidis.NewLuaScript(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])`),
	unlock: rueidis.NewLuaScript(`
local val = redis.call('get', KEYS[3])
if val ~= false then
  return tonumber(val)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return 1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1`),
	// The acquire's hash; then the release's hash, channel and latch.
	keys: func(key string) []string {
		return []string{key, key, "redisson_rwlock:{" + key + "}", "redisson_unlock_latch:{" + key + "}:" + javaRequest}
	},
	lockArgs:   []string{"30000", javaOwner + ":write"},
	unlockArgs: []string{"1", "30000", javaOwner + ":write", "publish", "15000"},
	split:      1,
	cleanup:    3,
	held:       1,
}

const (
	// javaOwner is an owner as Java names it: the client's UUID and the
	// thread's id.
	javaOwner = "c1e2b6a4-5d0f-4c39-9a57-0b8e3f1d2c44:17"
	// javaRequest is an unlock request id as Java makes it: 32 hex digits.
	javaRequest = "9b47174e75f14c1a8d2e6f0a3b5c7d91"
)
