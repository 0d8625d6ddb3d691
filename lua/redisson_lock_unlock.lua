-- Release one hold of a Redisson RLock (a reentrant mutex).
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_lock__channel:{N}"
-- KEYS[3] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- KEYS[4] the attempt latch of the hold being released (fairrw only)
-- ARGV[1] the message "0"
-- ARGV[2] lease in milliseconds (a remaining reentrant hold keeps this lease)
-- ARGV[3] the owner's field "<client>:<owner>"
-- ARGV[4] the publish command: "publish" or "spublish"
-- ARGV[5] unlock latch lifetime in milliseconds
-- ARGV[6] "del" to drop the attempt latch, "abort" to mark it aborted
-- ARGV[7] attempt latch lifetime in milliseconds
--
-- Returns nil when this owner holds nothing (Java raises
-- IllegalMonitorStateException; nothing is published), 0 when a reentrant
-- hold remains, 1 when the lock was freed. A retry with the same request id
-- returns the first call's answer from the latch.
--
-- Invariant: the last hold deletes the hash and publishes "0", which wakes
-- one waiter per client.
local latched = answered(KEYS[3], KEYS[4], ARGV[6], ARGV[7]) -- redisson_lib.lua
if latched ~= nil then
  return latched
end

if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end

local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  -- Java sets the lease again; never shorter than what is left, which a
  -- remaining hold with a longer explicit lease may need.
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[2])))
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
