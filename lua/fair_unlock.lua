-- Release one read or write hold under a fair policy, and set what its
-- owner still holds; or give an owner up (its acquire was abandoned).
--
-- KEYS[1]..KEYS[9] and ARGV[1]..ARGV[8] as in fair_lib.lua, and
-- KEYS[10] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- ARGV[9]  unlock latch lifetime in milliseconds
-- ARGV[10] "1" to give the owner up: its marker M is set (so that no late
--          copy of its attempts takes anything) and its queue entries go
-- ARGV[11] the marker's lifetime in milliseconds
-- ARGV[12] how many write holds the owner still has alive
-- ARGV[13] how long the longest of them has left, in ms
-- ARGV[14] how many read holds the owner still has alive
-- ARGV[15] how long the longest of them has left, in ms
--
-- Returns nil when the owner held no such hold (or it had expired), 0 when
-- the owner still holds in that mode, 1 when its last hold of that mode was
-- released. A retry with the same request id returns the first call's
-- answer from the latch; a release (not a give-up) that arrives too late
-- changes nothing.
--
-- Invariant: the owner's counts are exactly its live holds and its
-- deadlines the longest of them, so releasing one hold neither shortens
-- another live one nor leaves a dead one counted. When a write ends under
-- phase-fair, every reader waiting at that moment is admitted ahead of the
-- next writer; a release wakes exactly who may enter now (see wake()).
-- A retry gets the first answer; a release (a give-up is never stale) that
-- arrives too late changes nothing; a give-up sets the owner's marker.
local latched = answered(KEYS[10], M, ARGV[10], ARGV[11], ARGV[6], ARGV[7]) -- common.lua
if latched ~= nil then
  return reply(latched)
end

purge()
local freed = false
if ARGV[10] == '1' then
  local removed = redis.call('zrem', Q, owner)
  redis.call('hdel', S, 'q:' .. owner)
  if pf then
    removed = removed + redis.call('zrem', W, owner) + redis.call('zrem', A, owner)
  end
  freed = removed > 0
end

local writer = redis.call('hget', S, 'writer') == owner
local reads = redis.call('hexists', S, 'r:' .. owner) == 1
local result = -1
if (ARGV[2] == 'w' and writer) or (ARGV[2] == 'r' and reads) then
  local writes, wcover = tonumber(ARGV[12]), tonumber(ARGV[13])
  local nreads, rcover = tonumber(ARGV[14]), tonumber(ARGV[15])
  if writer then
    if writes > 0 then
      redis.call('hset', S, 'wcount', writes, 'wdeadline', now + wcover)
    else
      redis.call('hdel', S, 'writer', 'wcount', 'wdeadline', 'wtoken')
      if pf and redis.call('zcard', W) > 0 then
        redis.call('zunionstore', A, 2, A, W, 'aggregate', 'max')
        redis.call('del', W)
        redis.call('pexpireat', A, tonumber(redis.call('hget', S, 'horizon')))
      end
      freed = true
    end
  end
  if reads then
    if nreads > 0 then
      redis.call('hset', S, 'r:' .. owner, nreads)
      redis.call('zadd', R, now + rcover, owner)
    else
      redis.call('hdel', S, 'r:' .. owner)
      redis.call('zrem', R, owner)
      freed = true
    end
  end
  result = 1
  if (ARGV[2] == 'w' and writes > 0) or (ARGV[2] == 'r' and nreads > 0) then
    result = 0
  end
end
if freed then
  wake()
end
tidy()
return answer(KEYS[10], result, ARGV[9])
