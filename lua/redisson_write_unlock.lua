-- Release one write hold of a Redisson read-write lock.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_rwlock:{N}"
-- KEYS[3] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- KEYS[4] the attempt latch of the hold being released (fairrw only)
-- ARGV[1] the message "1"
-- ARGV[2] lease in milliseconds (a remaining reentrant hold keeps this lease)
-- ARGV[3] the owner's write field "<client>:<owner>:write"
-- ARGV[4] the publish command: "publish" or "spublish"
-- ARGV[5] unlock latch lifetime in milliseconds
-- ARGV[6] "del" to drop the attempt latch, "abort" to mark it aborted
-- ARGV[7] attempt latch lifetime in milliseconds
--
-- Returns nil when this owner held no write, 0 when a reentrant write hold
-- remains, 1 when the write was released. A retry with the same request id
-- returns the first call's answer from the latch.
--
-- Invariant: when the last write hold goes and the owner still holds reads,
-- the lock turns into a read lock (a downgrade) and nothing is published;
-- otherwise the hash is deleted and "1" published, waking every waiter.
local latched = answered(KEYS[3], KEYS[4], ARGV[6], ARGV[7]) -- redisson_lib.lua
if latched ~= nil then
  return latched
end

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[3])
local mode, holds = state[1], tonumber(state[2])
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return nil
end

if mode ~= 'write' or holds == nil then
  return nil
end

if holds > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end

-- The last write hold goes: the hash has only "mode" and this field left
-- unless the owner holds reads too.
if redis.call('hlen', KEYS[1]) == 2 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
else
  redis.call('hdel', KEYS[1], ARGV[3])
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
