-- Read everything a lock keeps, under whichever policy holds it, in one
-- atomic snapshot, for Client.Inspect. It only reads: fairrw runs it with
-- EVALSHA_RO where the server has it (Redis 7+), which refuses any write.
--
-- KEYS[1] N: the lock name: Redisson's read-write lock hash (it has the
--         field "mode") or its RLock hash (one field per owner)
-- KEYS[2] S: the fair policies' state hash "fairrw:<len>:{N}" (fair_lib.lua)
-- KEYS[3] R: their readers zset; KEYS[4] Q: their waiting writers zset;
-- KEYS[5] W: phase-fair's waiting readers; KEYS[6] A: its admitted readers
-- KEYS[7] F: the last fencing token "fairrw:<len>:{N}:fence" (common.lua)
-- KEYS[8..] lease keys "{N}:<owner>:rwlock_timeout:<k>" of Redisson read
--         holds, as the caller learnt them from an earlier call (none at
--         first: Redisson's hash names them, and every key is declared)
-- ARGV none: the script takes no arguments (ARGV[1] is nil)
--
-- Returns {now, n, s, r, q, w, a, f, leases}: now is the server's clock in
-- ms; n is {TYPE of N, PTTL of N (as a string), field, value, ...} (the
-- fields only when N is a hash); s is {TYPE of S, field, value, ...}; r, q, w and a are
-- {TYPE, member, score, ...} in score order (members only for a zset); f is
-- {TYPE of F, value} (the value only for a string); leases is the PTTL of
-- each of KEYS[8..], in order. Entries whose deadline passed are returned
-- as they are: the caller drops them, as every policy treats them as gone.
--
-- Invariant: only reads (TIME, TYPE, PTTL or PEXPIRETIME, HGETALL, ZRANGE,
-- GET), so
-- inspecting a lock never changes whether, how long or by whom it is held,
-- nor its queue; one script, so holders, waiters and the clock are one
-- instant's.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- pttl is PTTL of k as of now. Redis 7.0 counts a PTTL inside a script
-- from the moment it runs, not from the script's start or from now, so a
-- script held up between TIME and PTTL (a busy machine) would understate
-- every deadline; the absolute expiry (PEXPIRETIME, Redis 7+) minus now
-- is the remaining time as of the clock this script returns. A user whose
-- ACL predates PEXPIRETIME (docs/acl.md) still inspects, with PTTL.
local absolute = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
local function pttl(k)
  if not (absolute and redis.acl_check_cmd('pexpiretime', k)) then
    return redis.call('pttl', k)
  end
  local at = redis.call('pexpiretime', k)
  if at < 0 then
    return at -- -1: no expiry, -2: no key
  end
  return math.max(at - now, 0)
end

local function kind(k)
  return redis.call('type', k).ok
end

-- hash returns {type, [pttl,] field, value, ...}.
local function hash(k, withttl)
  local out = {kind(k)}
  if withttl then
    out[2] = tostring(pttl(k)) -- every element a string
  end
  if out[1] == 'hash' then
    for _, v in ipairs(redis.call('hgetall', k)) do
      out[#out + 1] = v
    end
  end
  return out
end

-- zset returns {type, member, score, ...}.
local function zset(k)
  local out = {kind(k)}
  if out[1] == 'zset' then
    for _, v in ipairs(redis.call('zrange', k, 0, -1, 'withscores')) do
      out[#out + 1] = v
    end
  end
  return out
end

local f = {kind(KEYS[7])}
if f[1] == 'string' then
  f[2] = redis.call('get', KEYS[7])
end
local leases = {}
for i = 8, #KEYS do
  leases[#leases + 1] = pttl(KEYS[i])
end
return {now, hash(KEYS[1], true), hash(KEYS[2], false), zset(KEYS[3]), zset(KEYS[4]), zset(KEYS[5]), zset(KEYS[6]), f, leases}
