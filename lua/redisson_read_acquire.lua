-- Take a read hold on a Redisson read-write lock (reader-preferring).
--
-- KEYS[1] the lock hash N
-- KEYS[2] this owner's lease-key prefix "{N}:<owner>:rwlock_timeout"
-- KEYS[3] the attempt latch "fairrw_attempt:{N}:<attempt id>" (fairrw only)
-- KEYS[4] the fair policies' state "fairrw:{N}", to refuse a name they hold
-- KEYS[5] the fencing counter "fairrw_fence:{N}" (fairrw only)
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's read field "<client>:<owner>"
-- ARGV[3] the owner's write field "<client>:<owner>:write"
-- ARGV[4] attempt latch lifetime in milliseconds
--
-- Returns {1, token} when the hold was granted (also for a retry of a
-- granted attempt; token: the current fencing token), {-1, 0} when the
-- attempt was given up by its caller, or {0, PTTL of the hash in ms}: how
-- long to wait at most. (Java's script returns nil or the PTTL; this one
-- also reports the fencing token, so it returns a pair.) An error reply
-- "FAIRRW_POLICY ..." when a fair policy holds the name, or an RLock (a
-- hash without "mode"): the two would not exclude each other.
--
-- Invariant: the hash has exactly Redisson's fields; every read hold K of an
-- owner has its own lease key ":K" with a PX lease, and the hash lives at least
-- as long as the longest of them. A read is granted whenever no other owner
-- holds the write (Redisson's rule: writers can starve).
local replay = replayed(KEYS[3], KEYS[4]) -- redisson_lib.lua
if replay then
  return replay
end
local token = tonumber(redis.call('get', KEYS[5])) or 0

local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  if redis.call('exists', KEYS[1]) == 1 then -- a hash without "mode": an RLock's
    return redis.error_reply('FAIRRW_POLICY lock is held as a mutex (Redisson RLock)')
  end
  -- One HSET of both fields writes what Java's two HSETs write, in order.
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[3], token, 'px', ARGV[4])
  return {1, token}
end

if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', ARGV[1])
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remaining, tonumber(ARGV[1])))
  redis.call('set', KEYS[3], token, 'px', ARGV[4])
  return {1, token}
end

return {0, redis.call('pttl', KEYS[1])}
