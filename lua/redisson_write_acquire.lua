-- Take the write hold on a Redisson read-write lock.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the attempt latch "fairrw_attempt:{N}:<attempt id>" (fairrw only)
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's write field "<client>:<owner>:write"
-- ARGV[3] attempt latch lifetime in milliseconds
--
-- Returns nil when granted (also for a retry of a granted attempt), the string
-- "aborted" when the attempt was given up by its caller, or the PTTL of the
-- hash in milliseconds.
--
-- Invariant: mode=write with exactly one write field; a reentrant write adds
-- its lease to the remaining PTTL (Redisson's quirk, kept for parity). A read
-- holder never gets the write (no upgrade), even when it is the only reader.
local latch = redis.call('get', KEYS[2])
if latch == 'aborted' then
  return 'aborted'
end
if latch then
  return nil
end

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
local mode, holds = state[1], state[2]
if mode == false then
  -- One HSET of both fields writes what Java's two HSETs write, in order.
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[2], 'granted', 'px', ARGV[3])
  return nil
end

if mode == 'write' and holds then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], remaining + tonumber(ARGV[1]))
  redis.call('set', KEYS[2], 'granted', 'px', ARGV[3])
  return nil
end

return redis.call('pttl', KEYS[1])
