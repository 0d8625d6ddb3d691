-- Take a read hold on a Redisson read-write lock (reader-preferring).
--
-- KEYS[1] the lock hash N
-- KEYS[2] this owner's lease-key prefix "{N}:<owner>:rwlock_timeout"
-- KEYS[3] the attempt latch "fairrw_attempt:{N}:<attempt id>" (fairrw only)
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's read field "<client>:<owner>"
-- ARGV[3] the owner's write field "<client>:<owner>:write"
-- ARGV[4] attempt latch lifetime in milliseconds
--
-- Returns nil when the hold was granted (also for a retry of a granted
-- attempt), the string "aborted" when the attempt was given up by its caller,
-- or the PTTL of the hash in milliseconds: how long to wait at most.
--
-- Invariant: the hash has exactly Redisson's fields; every read hold K of an
-- owner has its own lease key ":K" with a PX lease, and the hash lives at least
-- as long as the longest of them. A read is granted whenever no other owner
-- holds the write (Redisson's rule: writers can starve).
local latch = redis.call('get', KEYS[3])
if latch == 'aborted' then
  return 'aborted'
end
if latch then
  return nil
end

local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  -- One HSET of both fields writes what Java's two HSETs write, in order.
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[3], 'granted', 'px', ARGV[4])
  return nil
end

if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', ARGV[1])
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remaining, tonumber(ARGV[1])))
  redis.call('set', KEYS[3], 'granted', 'px', ARGV[4])
  return nil
end

return redis.call('pttl', KEYS[1])
