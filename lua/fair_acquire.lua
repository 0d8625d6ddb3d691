-- Take a read or the write under the writer-preferring or phase-fair policy.
--
-- KEYS[1]..KEYS[9] and ARGV[1]..ARGV[8] as in fair_lib.lua, and
-- ARGV[9]  "1" to queue up when refused (Lock, RLock), "0" not to (Try*)
-- ARGV[10] 0 for an owner's first hold; n > 0 for a further hold of an
--          owner that holds the lock, which makes n its count in that mode
--
-- Returns {1, token} when granted, {0, ms} when refused (ms: the longest to
-- wait before trying again), {-1, 0} when the attempt is stale or its owner
-- was given up, {-2, 0} when a further hold's owner holds nothing any more;
-- an error reply "FAIRRW_POLICY ..." when the name is held under another
-- policy.
--
-- Invariant: a read is granted to an owner that holds the lock already
-- (a further hold never waits on a queued writer); otherwise, no other
-- writer holds it and no writer waits (phase-fair: or the reader was
-- admitted when the last write ended). The write is granted to the head of
-- the FIFO queue once no one else holds; write grants mint a new fencing
-- token. A retry never counts twice: a first hold that finds its owner
-- holding is a retry of a granted attempt and only renews; a further hold
-- sets the count rather than adding to it.
if stale(ARGV[6], ARGV[7]) or redis.call('exists', M) == 1 then -- common.lua
  return {-1, 0}
end
local refused, unrecorded = mismatch()
if refused then
  return refused
end
-- Nothing is written before purge has read S, R and Q (and W and A under
-- phase-fair): a foreign value in any of them fails the script before it
-- changed anything.
purge()
local queue, further = ARGV[9] == '1', tonumber(ARGV[10])
local writer = redis.call('hget', S, 'writer')
local reads = tonumber(redis.call('hget', S, 'r:' .. owner)) or 0
local granted

-- read takes (or renews) a read hold of owner, count holds in all.
local function read(count)
  local deadline = now + lease
  local token = last_token(F) -- before any write
  redis.call('hset', S, 'r:' .. owner, count)
  redis.call('zadd', R, 'GT', deadline, owner)
  if pf then
    redis.call('zrem', A, owner)
    redis.call('zrem', W, owner)
  end
  extend(deadline)
  return token
end

-- write renews the owner's write hold, count holds in all.
local function write(count)
  local token = tonumber(redis.call('hget', S, 'wtoken')) or last_token(F)
  local deadline = math.max(now + lease, tonumber(redis.call('hget', S, 'wdeadline')))
  redis.call('hset', S, 'wcount', count, 'wdeadline', deadline)
  extend(deadline)
  return token
end

if further > 0 then
  if ARGV[2] == 'r' and (writer == owner or reads > 0) then
    granted = read(further)
  elseif ARGV[2] == 'w' and writer == owner then
    granted = write(further)
  else
    return {-2, 0}
  end
elseif ARGV[2] == 'r' then
  local admit = reads > 0 -- a retry of this first hold, which was granted
  if not admit and not writer then
    admit = (pf and redis.call('zscore', A, owner) ~= false) or redis.call('zcard', Q) == 0
  end
  if admit then
    granted = read(math.max(reads, 1))
  elseif queue and pf then
    redis.call('zadd', W, now + qlease, owner)
    extend(now + qlease)
  end
elseif writer == owner then -- a retry of this first hold, which was granted
  granted = write(tonumber(redis.call('hget', S, 'wcount')))
else
  local queued = redis.call('zscore', Q, owner) ~= false
  local free = not writer and redis.call('zcard', R) == 0 and (not pf or redis.call('zcard', A) == 0)
  local head = redis.call('zrange', Q, 0, 0)[1]
  if free and (head == owner or (not head and not queued)) then
    local deadline = now + lease
    granted = mint(F) -- common.lua
    if queued then
      redis.call('zrem', Q, owner)
      redis.call('hdel', S, 'q:' .. owner)
    end
    redis.call('hset', S, 'writer', owner, 'wcount', 1, 'wdeadline', deadline, 'wtoken', string.format('%.0f', granted))
    extend(deadline)
  elseif queue or queued then
    if not queued then
      redis.call('zadd', Q, redis.call('hincrby', S, 'seq', 1), owner)
    end
    redis.call('hset', S, 'q:' .. owner, now + qlease)
    extend(now + qlease)
  end
end

-- Every path that wrote (a grant among them) wrote S: record the policy.
if unrecorded and (granted or redis.call('exists', S) == 1) then
  redis.call('hset', S, 'policy', policy)
end
if granted then
  return {1, granted}
end
local wait = bound()
tidy()
return {0, wait}
