-- Take the write hold on a Redisson read-write lock.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the owner's give-up marker "fairrw_attempt:{N}:<owner>" (fairrw only)
-- KEYS[3] the fair policies' state, to refuse a name they hold
-- KEYS[4] the last fencing token "fairrw:<len>:{N}:fence" (fairrw only)
-- KEYS[5] the fair policies' readers, which can outlive their state
-- ARGV[1] lease in milliseconds
-- ARGV[2] the owner's write field "<client>:<owner>:write"
-- ARGV[3] the attempt's stamp (ms, the client's clock)
-- ARGV[4] the attempt's window in ms (see common.lua)
-- ARGV[5] 0 for an owner's first hold; n > 0 for a further (reentrant)
--         hold, which makes n the owner's count of write holds
--
-- Returns {1, token} when granted, {0, PTTL of the hash in ms} when
-- refused, {-1, 0} when the attempt is stale or its owner was given up,
-- {-2, 0} when a further hold's owner no longer holds the write. A first
-- hold mints a fencing token (common.lua); a further one, or a retry,
-- returns the last. An error reply "FAIRRW_POLICY ..." when a fair policy
-- holds the name, or an RLock (a hash without "mode").
--
-- Invariant: mode=write with exactly one write field; a reentrant write adds
-- its lease to the remaining PTTL (Redisson's quirk, kept for parity), once:
-- a retry only makes sure the lease is covered. A read holder never gets the
-- write (no upgrade), even when it is the only reader.
if stale(ARGV[3], ARGV[4]) then -- common.lua
  return {-1, 0}
end
local lease, further = tonumber(ARGV[1]), tonumber(ARGV[5])

-- One EXISTS probes the marker, the fair policies' keys and the hash: on a
-- free name (the uncontended lock) none exists, and the write is granted
-- with no read of the hash. Otherwise the hash is read, and what exists
-- beside it is one of the others: refused as refused() would (redisson_lib.lua).
local function grant()
  local token = mint(KEYS[4])
  -- One HSET of both fields writes what Java's two HSETs write, in order.
  redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, token}
end
local present = redis.call('exists', KEYS[2], KEYS[3], KEYS[5], KEYS[1])
if present == 0 then
  if further > 0 then
    return {-2, 0}
  end
  return grant()
end
local state = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
local mode, holds = state[1], tonumber(state[2])
local remaining = redis.call('pttl', KEYS[1])
local hash = 1
if remaining == -2 then
  hash = 0
end
-- More than the hash counted: one of the others exists, unless the hash
-- expired since the EXISTS (Redis freezes a script's clock for expiry;
-- miniredis does not), which a second probe of the others tells.
if present > hash and redis.call('exists', KEYS[2], KEYS[3], KEYS[5]) > 0 then
  return foreign(KEYS[2], KEYS[3]) -- redisson_lib.lua
end
if further > 0 then
  if mode ~= 'write' or not holds then
    return {-2, 0}
  end
  local token = last_token(KEYS[4]) -- before any write
  if holds ~= further then
    redis.call('hset', KEYS[1], ARGV[2], further)
    redis.call('pexpire', KEYS[1], remaining + lease)
  else
    redis.call('pexpire', KEYS[1], math.max(remaining, lease))
  end
  return {1, token}
end

if mode == false then
  if remaining ~= -2 then -- the hash exists without "mode": an RLock's
    return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson-mutex (a Redisson RLock)')
  end
  return grant() -- it expired since the EXISTS (see above)
end
if mode == 'write' and holds then -- a retry of this first hold, which was granted
  local token = last_token(KEYS[4])
  if token == 0 then
    token = mint(KEYS[4])
  end
  redis.call('pexpire', KEYS[1], math.max(remaining, lease))
  return {1, token}
end
return {0, remaining}
