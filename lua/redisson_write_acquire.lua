-- Take the write hold on a Redisson read-write lock.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the attempt latch "fairrw_attempt:{N}:<attempt id>" (fairrw only)
-- KEYS[3] the fair policies' state "fairrw:{N}", to refuse a name they hold
-- KEYS[4] the fencing counter "fairrw_fence:{N}" (fairrw only)
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's write field "<client>:<owner>:write"
-- ARGV[3] attempt latch lifetime in milliseconds
--
-- Returns {1, token} when granted (also for a retry of a granted attempt), {-1, 0}
-- when the attempt was given up by its caller, or {0, PTTL of the hash in ms}.
-- A new write hold mints a fencing token (INCR of the counter); a reentrant
-- one returns the owner's current token. An error reply "FAIRRW_POLICY ..."
-- when a fair policy holds the name, or an RLock (a hash without "mode"):
-- the two would not exclude each other.
--
-- Invariant: mode=write with exactly one write field; a reentrant write adds
-- its lease to the remaining PTTL (Redisson's quirk, kept for parity). A read
-- holder never gets the write (no upgrade), even when it is the only reader.
local replay = replayed(KEYS[2], KEYS[3]) -- redisson_lib.lua
if replay then
  return replay
end

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
local mode, holds = state[1], state[2]
if mode == false then
  if redis.call('exists', KEYS[1]) == 1 then -- a hash without "mode": an RLock's
    return redis.error_reply('FAIRRW_POLICY lock is held as a mutex (Redisson RLock)')
  end
  -- The counter first: a foreign value there fails the script before it
  -- has written anything (a script's writes are not rolled back).
  local token = redis.call('incr', KEYS[4])
  -- One HSET of both fields writes what Java's two HSETs write, in order.
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[2], token, 'px', ARGV[3])
  return {1, token}
end

if mode == 'write' and holds then
  local token = tonumber(redis.call('get', KEYS[4])) or 0
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], remaining + tonumber(ARGV[1]))
  redis.call('set', KEYS[2], token, 'px', ARGV[3])
  return {1, token}
end

return {0, redis.call('pttl', KEYS[1])}
