-- Take a hold of a Redisson RLock (a reentrant mutex).
--
-- KEYS[1] the lock hash N: field "<client>:<owner>" = that owner's hold count
-- KEYS[2] the attempt latch "fairrw_attempt:{N}:<attempt id>" (fairrw only)
-- KEYS[3] the fair policies' state "fairrw:{N}", to refuse a name they hold
-- KEYS[4] the fencing counter "fairrw_fence:{N}" (fairrw only)
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's field "<client>:<owner>"
-- ARGV[3] attempt latch lifetime in milliseconds
--
-- Returns {1, token} when granted (also for a retry of a granted attempt),
-- {-1, 0} when the attempt was given up by its caller, or {0, PTTL of the
-- hash in ms} when another owner holds it (Java returns nil or the PTTL). A
-- first hold mints a fencing token (INCR of the counter); a reentrant one
-- returns the current token. An error reply "FAIRRW_POLICY ..." when the
-- name is a read-write lock (its hash has a "mode" field) or a fair
-- policy's: an RLock and an RReadWriteLock on one name do not exclude each
-- other, so neither side may take the other's name.
--
-- Invariant: the hash holds one field, the holder's count, and lives at
-- least the lease; a reentrant hold sets the lease again (Java's PEXPIRE)
-- unless more is left (a longer hold of the same owner stands on it), and
-- does not add to it as the read-write lock's write does.
local replay = replayed(KEYS[2], KEYS[3]) -- redisson_lib.lua
if replay then
  return replay
end

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
if state[1] then
  return redis.error_reply('FAIRRW_POLICY lock is held as a read-write lock (policy redisson)')
end

local token
if state[2] then
  token = tonumber(redis.call('get', KEYS[4])) or 0
elseif redis.call('exists', KEYS[1]) == 0 then
  -- The counter first: a foreign value there fails the script before it
  -- has written anything (a script's writes are not rolled back).
  token = redis.call('incr', KEYS[4])
else
  return {0, redis.call('pttl', KEYS[1])}
end
redis.call('hincrby', KEYS[1], ARGV[2], 1)
-- Java sets the lease again; never shorter than what is left, though: a
-- reentrant hold with a short explicit lease must not cut the others short.
redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
redis.call('set', KEYS[2], token, 'px', ARGV[3])
return {1, token}
