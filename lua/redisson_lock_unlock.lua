-- Release one hold of a Redisson RLock (a reentrant mutex), and set what
-- the owner still holds.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_lock__channel:{N}"
-- KEYS[3] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- KEYS[4] the owner's give-up marker "fairrw_attempt:{N}:<owner>" (fairrw only)
-- ARGV[1] the message "0"
-- ARGV[2] the owner's field "<client>:<owner>"
-- ARGV[3] the publish command: "publish" or "spublish"
-- ARGV[4] unlock latch lifetime in milliseconds
-- ARGV[5] "1" when the owner is given up (its acquire was abandoned): its
--         marker is set
-- ARGV[6] the marker's lifetime in milliseconds
-- ARGV[7] the release's stamp (ms, the client's clock)
-- ARGV[8] the release's window in ms (see common.lua)
-- ARGV[9] how many holds the owner still has alive
-- ARGV[10] how long the longest of them has left, in ms
--
-- Returns nil when this owner holds nothing (Java raises
-- IllegalMonitorStateException; nothing is published), 0 when a hold of
-- the owner remains, 1 when the lock was freed. A retry with the same
-- request id returns the first call's answer from the latch; a copy that
-- arrives too late changes nothing and returns -3 (its sender sends it
-- again with a new stamp).
--
-- Invariant: the owner's field counts exactly its live holds and the hash
-- lives as long as the longest of them (Java sets the lease again, which can
-- cut a longer hold short or keep a dead one counted). The last hold deletes
-- the hash and publishes "0", which wakes one waiter per client.
local refused = publish_refused(ARGV[3], KEYS[2]) -- before any write (common.lua)
if refused then
  return refused
end
local latched = answered(KEYS[3], KEYS[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]) -- common.lua
if latched ~= nil then
  return reply(latched)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return answer(KEYS[3], -1, ARGV[4])
end
local holds = tonumber(ARGV[9])
if holds > 0 then
  redis.call('hset', KEYS[1], ARGV[2], holds)
  redis.call('pexpire', KEYS[1], ARGV[10])
  return answer(KEYS[3], 0, ARGV[4])
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return answer(KEYS[3], 1, ARGV[4])
