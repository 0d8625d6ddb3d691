-- Take a read hold on a Redisson read-write lock (reader-preferring).
--
-- KEYS[1] the lock hash N
-- KEYS[2] this owner's lease-key prefix "{N}:<owner>:rwlock_timeout"
-- KEYS[3] the owner's give-up marker "fairrw_attempt:{N}:<owner>" (fairrw only)
-- KEYS[4] the fair policies' state, to refuse a name they hold
-- KEYS[5] the last fencing token "fairrw:<len>:{N}:fence" (fairrw only)
-- KEYS[6] the fair policies' readers, which can outlive their state
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's read field "<client>:<owner>"
-- ARGV[3] the owner's write field "<client>:<owner>:write"
-- ARGV[4] the attempt's stamp (ms, the client's clock)
-- ARGV[5] the attempt's window in ms (see common.lua)
-- ARGV[6] 0 for an owner's first hold; n > 0 for a further hold, which
--         makes n the owner's count of read holds
--
-- Returns {1, token} when the hold was granted (token: the last fencing
-- token), {0, PTTL of the hash in ms} when refused (how long to wait at
-- most), {-1, 0} when the attempt is stale or its owner was given up,
-- {-2, 0} when a further hold's owner holds nothing any more. (Java's script
-- returns nil or the PTTL.) An error reply "FAIRRW_POLICY ..." when a fair
-- policy holds the name, or an RLock (a hash without "mode").
--
-- Invariant: the hash has exactly Redisson's fields; the longest of the
-- owner's lease keys outlives each of its read holds, and the hash the
-- longest of every hold. A read is granted whenever no other owner holds the
-- write (Redisson's rule: writers can starve). A retry never counts twice:
-- an owner's first hold finds its field there and only renews it; a
-- further hold sets the count rather than adding to it, and deletes the
-- lease keys of holds counted above it, so none is left behind uncounted.
local early = refused(KEYS[3], KEYS[4], KEYS[6], ARGV[4], ARGV[5]) -- redisson_lib.lua
if early then
  return early
end
local lease, further = tonumber(ARGV[1]), tonumber(ARGV[6])
-- Read before any write: a foreign value there fails the script before it
-- changed anything (a script's writes are not rolled back).
local token = last_token(KEYS[5]) -- common.lua

-- cover makes lease key k and the hash live at least the lease, never
-- shortening either (another live hold may need what is left).
local function cover(k)
  local key = KEYS[2] .. ':' .. k
  redis.call('set', key, 1, 'px', math.max(redis.call('pttl', key), lease))
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), lease))
  return {1, token}
end

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
local mode, holds = state[1], tonumber(state[2])
if further > 0 then
  if not holds and (mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return {-2, 0}
  end
  redis.call('hset', KEYS[1], ARGV[2], further)
  -- Holds counted above the new count ended (their leases ran out, or a
  -- release raced this hold): their lease keys would outlive them uncounted.
  for k = further + 1, (holds or 0) do
    redis.call('del', KEYS[2] .. ':' .. k)
  end
  return cover(further)
end

if mode == false then
  if redis.call('exists', KEYS[1]) == 1 then -- a hash without "mode": an RLock's
    return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson-mutex (a Redisson RLock)')
  end
  -- One HSET of both fields writes what Java's two HSETs write, in order.
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', lease)
  redis.call('pexpire', KEYS[1], lease)
  return {1, token}
end
if holds then -- a retry of this first hold, which was granted
  return cover(1)
end
if mode == 'read' then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  return cover(1)
end
return {0, redis.call('pttl', KEYS[1])}
