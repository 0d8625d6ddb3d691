-- Release one hold of a Redisson read-write lock, read or write, and set
-- what the owner still holds.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_rwlock:{N}"
-- KEYS[3] this owner's lease-key prefix "{N}:<owner>:rwlock_timeout"
-- KEYS[4] the key prefix "{N}" that rebuilds every owner's lease keys
-- KEYS[5] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- KEYS[6] the owner's give-up marker "fairrw_attempt:{N}:<owner>" (fairrw only)
-- ARGV[1] the mode of the hold released: "r" or "w"
-- ARGV[2] the owner's read field "<client>:<owner>"
-- ARGV[3] the owner's write field "<client>:<owner>:write"
-- ARGV[4] the publish command: "publish" or "spublish"
-- ARGV[5] unlock latch lifetime in milliseconds
-- ARGV[6] "1" when the owner is given up (its acquire was abandoned): its
--         marker is set, and nothing is published unless a hold went
-- ARGV[7] the marker's lifetime in milliseconds
-- ARGV[8] the release's stamp (ms, the client's clock)
-- ARGV[9] the release's window in ms (see common.lua)
-- ARGV[10] how many write holds the owner still has alive
-- ARGV[11] how long the longest of them has left, in ms
-- ARGV[12..] how long each read hold the owner still has alive has left,
--         in ms, the longest first
--
-- Returns nil when this owner held no such hold (Java raises
-- IllegalMonitorStateException), 0 when the lock is still held (a hold of
-- the owner or other holders remain), 1 when the owner's last hold of that
-- mode went and the lock was freed or, for a write, turned into the owner's
-- read lock (a downgrade). A retry with the same request id returns the
-- first call's answer from the latch; a copy that arrives too late changes
-- nothing and returns -3 (its sender sends it again with a new stamp).
--
-- Invariant: the owner's fields count exactly its live holds, and each of
-- those is covered: the hash lives as long as the longest hold of any owner
-- (for reads, the longest lease key, as Java computes it), so releasing one
-- hold neither shortens another live one nor leaves a dead one counted.
-- The last holder deletes the hash and publishes "0" (a read) or "1" (a
-- write); a downgrade publishes nothing, as in Java. Readers that crashed
-- are found here (their lease keys are gone), so they never pin the lock.
local refused = publish_refused(ARGV[4], KEYS[2]) -- before any write (common.lua)
if refused then
  return refused
end
local latched = answered(KEYS[5], KEYS[6], ARGV[6], ARGV[7], ARGV[8], ARGV[9]) -- common.lua
if latched ~= nil then
  return reply(latched)
end
local write = ARGV[1] == 'w'
local msg = '0'
if write then
  msg = '1'
end

-- One HMGET reads all this needs of the hash: the mode, the owner's write
-- count and its read count (each command a script runs costs Redis a
-- conversion of its arguments and its reply). Neither field is written
-- before it is used below, and ARGV[2] is never ARGV[3].
local state = redis.call('hmget', KEYS[1], 'mode', ARGV[3], ARGV[2])
local mode, wfield, rfield = state[1], state[2], state[3]
if mode == false then
  if ARGV[6] ~= '1' then
    redis.call(ARGV[4], KEYS[2], msg) -- Java publishes on unlock of a missing lock
  end
  return answer(KEYS[5], -1, ARGV[5])
end
local mine = rfield
if write then
  mine = wfield
end
if mine == false or (write and mode ~= 'write') then
  return answer(KEYS[5], -1, ARGV[5])
end

-- Set the owner's holds to what is alive.
local writes, wcover = tonumber(ARGV[10]), tonumber(ARGV[11])
if writes == 0 then
  wcover = 0 -- no write left to cover (the client sends at least 1 ms)
  -- The owner's last write, with no read of its own: when mode and the
  -- write field are all the hash has (a write is granted only on a free
  -- name, and only its owner takes reads beside it), the lock goes free.
  -- One HLEN tells, before any write; otherwise the steps below run.
  if write and rfield == false and redis.call('hlen', KEYS[1]) == 2 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], msg)
    return answer(KEYS[5], 1, ARGV[5])
  end
end
local reads, rcover = #ARGV - 11, 0
if reads > 0 then
  rcover = tonumber(ARGV[12])
end
-- wentWrite: the owner's last write went here (also when a read is the
-- hold released: its write leases ended unreleased, by their lease).
local wentWrite = false
if wfield ~= false then
  if writes > 0 then
    redis.call('hset', KEYS[1], ARGV[3], writes)
  else
    redis.call('hdel', KEYS[1], ARGV[3])
    wentWrite = true
  end
end
local had = tonumber(rfield) or 0
if had > 0 then
  if reads > 0 then
    redis.call('hset', KEYS[1], ARGV[2], reads)
  else
    redis.call('hdel', KEYS[1], ARGV[2])
  end
  for k = 1, reads do
    redis.call('set', KEYS[3] .. ':' .. k, 1, 'px', ARGV[11 + k])
  end
  for k = reads + 1, had do
    redis.call('del', KEYS[3] .. ':' .. k)
  end
end

if redis.call('hlen', KEYS[1]) == 1 then -- only "mode" is left
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], msg)
  return answer(KEYS[5], 1, ARGV[5])
end
if write then
  if writes > 0 then
    redis.call('pexpire', KEYS[1], math.max(wcover, rcover))
    return answer(KEYS[5], 0, ARGV[5])
  end
  -- A downgrade: only the owner's reads are left; nothing is published.
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('pexpire', KEYS[1], math.max(rcover, 1))
  return answer(KEYS[5], 1, ARGV[5])
end

-- A read went and others remain: as Java, the hash lives as long as the
-- longest read lease key of any owner, and as the owner's own write.
-- When the owner's write went with it, only the owner's reads are left: a
-- downgrade, as in the write branch (mode "write" without a writer would
-- keep every other reader out).
if wentWrite and mode == 'write' then
  redis.call('hset', KEYS[1], 'mode', 'read')
  mode = 'read'
end
local longest = -3
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
  local holds = tonumber(redis.call('hget', KEYS[1], f))
  if type(holds) == 'number' then
    for k = holds, 1, -1 do
      longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. k))
    end
  end
end
if longest > 0 or wcover > 0 then
  redis.call('pexpire', KEYS[1], math.max(longest, wcover))
  return answer(KEYS[5], 0, ARGV[5])
end
if mode == 'write' then
  return answer(KEYS[5], 0, ARGV[5])
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], msg)
return answer(KEYS[5], 1, ARGV[5])
