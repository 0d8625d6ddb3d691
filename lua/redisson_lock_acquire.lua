-- Take a hold of a Redisson RLock (a reentrant mutex).
--
-- KEYS[1] the lock hash N: field "<client>:<owner>" = that owner's hold count
-- KEYS[2] the owner's give-up marker "fairrw_attempt:{N}:<owner>" (fairrw only)
-- KEYS[3] the fair policies' state, to refuse a name they hold
-- KEYS[4] the last fencing token "fairrw:<len>:{N}:fence" (fairrw only)
-- KEYS[5] the fair policies' readers, which can outlive their state
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's field "<client>:<owner>"
-- ARGV[3] the attempt's stamp (ms, the client's clock)
-- ARGV[4] the attempt's window in ms (see common.lua)
-- ARGV[5] 0 for an owner's first hold; n > 0 for a further (reentrant)
--         hold, which makes n the owner's hold count
--
-- Returns {1, token} when granted, {0, PTTL of the hash in ms} when another
-- owner holds it (Java returns nil or the PTTL), {-1, 0} when the attempt is
-- stale or its owner was given up, {-2, 0} when a further hold's owner
-- holds nothing any more. A first hold mints a fencing token; a further
-- one, or a retry, returns the last. An error reply "FAIRRW_POLICY ..."
-- when the name is a read-write lock (its hash has a "mode" field) or a fair
-- policy's: an RLock and an RReadWriteLock on one name do not exclude each
-- other, so neither side may take the other's name.
--
-- Invariant: the hash holds one field, the holder's count, and lives at
-- least the lease; a hold never shortens what is left (Java sets the lease
-- again: a reentrant hold with a short lease would cut the others short).
local early = refused(KEYS[2], KEYS[3], KEYS[5], ARGV[3], ARGV[4]) -- redisson_lib.lua
if early then
  return early
end
local lease, further = tonumber(ARGV[1]), tonumber(ARGV[5])

local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
if state[1] then
  return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson (a Redisson read-write lock)')
end
-- The hash's PTTL, read once: -2 says it does not exist (no EXISTS), and
-- no branch below changes the expiry before the last line moves it.
local remaining = redis.call('pttl', KEYS[1])
local token
if further > 0 then
  if not state[2] then
    return {-2, 0}
  end
  token = last_token(KEYS[4]) -- before any write
  redis.call('hset', KEYS[1], ARGV[2], further)
elseif state[2] then -- a retry of this first hold, which was granted
  token = last_token(KEYS[4])
  if token == 0 then
    token = mint(KEYS[4])
  end
elseif remaining == -2 then
  token = mint(KEYS[4])
  redis.call('hset', KEYS[1], ARGV[2], 1)
else
  return {0, remaining}
end
redis.call('pexpire', KEYS[1], math.max(remaining, lease))
return {1, token}
