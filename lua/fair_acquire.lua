-- Take a read or the write under the writer-preferring or phase-fair policy.
--
-- KEYS[1]..KEYS[8] and ARGV[1]..ARGV[7] as in fair_lib.lua, and
-- KEYS[9] the attempt latch "fairrw_attempt:{N}:<attempt id>"
-- ARGV[8] "1" to queue up when refused (Lock, RLock), "0" not to (Try*)
--
-- Returns {1, token} when granted (also for a retry of a granted attempt),
-- {0, ms} when refused (ms: the longest to wait before trying again),
-- {-1, 0} when the attempt had been aborted by its caller; an error reply
-- "FAIRRW_POLICY ..." when the name is held under another policy.
--
-- Invariant: a read is granted to an owner that holds the lock already
-- (reentrancy never waits on a queued writer); otherwise, no other writer
-- holds it and no writer waits (phase-fair: or the reader was admitted when
-- the last write ended). The write is granted to the head of the FIFO queue
-- once no one else holds; write grants mint a new fencing token.
local latch = redis.call('get', KEYS[9])
if latch == 'aborted' then
  return {-1, 0}
end
if latch then
  return {1, tonumber(latch)}
end
local refused, unrecorded = mismatch()
if refused then
  return refused
end
-- Nothing is written before purge has read S, R and Q (and W and A under
-- phase-fair) and the fence was read (and, for a new write, INCR'd): a
-- foreign value in any of them fails the script before it changed anything.
purge()
local fence = token()
local queue = ARGV[8] == '1'
local writer = redis.call('hget', S, 'writer')
local reads = tonumber(redis.call('hget', S, 'r:' .. owner)) or 0
local granted

if ARGV[2] == 'r' then
  local admit = writer == owner or reads > 0
  if not admit and not writer then
    admit = (pf and redis.call('zscore', A, owner) ~= false) or redis.call('zcard', Q) == 0
  end
  if admit then
    local deadline = now + lease
    redis.call('hincrby', S, 'r:' .. owner, 1)
    redis.call('zadd', R, 'GT', deadline, owner)
    if pf then
      redis.call('zrem', A, owner)
      redis.call('zrem', W, owner)
    end
    extend(deadline)
    granted = fence
  elseif queue and pf then
    redis.call('zadd', W, now + qlease, owner)
    extend(now + qlease)
  end
elseif writer == owner then
  local deadline = math.max(now + lease, tonumber(redis.call('hget', S, 'wdeadline')))
  redis.call('hincrby', S, 'wcount', 1)
  redis.call('hset', S, 'wdeadline', deadline)
  extend(deadline)
  granted = fence
elseif reads == 0 then
  local queued = redis.call('zscore', Q, owner) ~= false
  local free = not writer and redis.call('zcard', R) == 0 and (not pf or redis.call('zcard', A) == 0)
  local head = redis.call('zrange', Q, 0, 0)[1]
  if free and (head == owner or (not head and not queued)) then
    local deadline = now + lease
    -- The counter first: a non-integer there fails before any write.
    granted = redis.call('incr', F)
    if queued then
      redis.call('zrem', Q, owner)
      redis.call('hdel', S, 'q:' .. owner)
    end
    redis.call('hset', S, 'writer', owner, 'wcount', 1, 'wdeadline', deadline)
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
  redis.call('set', KEYS[9], granted, 'px', ARGV[6])
  return {1, granted}
end
local wait = bound()
tidy()
return {0, wait}
