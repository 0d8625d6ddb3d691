-- Release one read hold of a Redisson read-write lock.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_rwlock:{N}"
-- KEYS[3] this owner's lease-key prefix "{N}:<owner>:rwlock_timeout"
-- KEYS[4] the key prefix "{N}" that rebuilds every owner's lease keys
-- KEYS[5] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- KEYS[6] the attempt latch of the hold being released (fairrw only)
-- ARGV[1] the message "0"
-- ARGV[2] the owner's read field "<client>:<owner>"
-- ARGV[3] the publish command: "publish" or "spublish"
-- ARGV[4] unlock latch lifetime in milliseconds
-- ARGV[5] "del" to drop the attempt latch, "abort" to mark it aborted
-- ARGV[6] attempt latch lifetime in milliseconds
--
-- Returns nil when this owner held no read (Java raises
-- IllegalMonitorStateException), 0 when the lock is still held (a reentrant
-- hold or other holders remain), 1 when the lock was freed. A retry with the
-- same request id returns the first call's answer from the latch.
--
-- Invariant: the hash lives as long as its longest remaining read lease; the
-- last live holder deletes it and publishes "0". Readers that crashed are
-- found here (their lease keys are gone), so they never pin the lock.
local latched = answered(KEYS[5], KEYS[6], ARGV[5], ARGV[6]) -- redisson_lib.lua
if latched ~= nil then
  return latched
end

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
local mode, holds = state[1], tonumber(state[2])
if mode == false then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('set', KEYS[5], 1, 'px', ARGV[4])
  return nil
end

if holds == nil then
  return nil
end

-- Fast path: the owner's last read, and no other field but "mode": the
-- general path below would end in the same state.
if holds <= 1 and redis.call('hlen', KEYS[1]) == 2 then
  redis.call('del', KEYS[1], KEYS[3] .. ':1')
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('set', KEYS[5], 1, 'px', ARGV[4])
  return 1
end

local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if counter == 0 then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))

if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  local fields = redis.call('hkeys', KEYS[1])
  for _, field in ipairs(fields) do
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if type(holds) == 'number' then
      for k = holds, 1, -1 do
        local remaining = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k)
        longest = math.max(remaining, longest)
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
end

redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
