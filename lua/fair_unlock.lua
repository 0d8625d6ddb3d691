-- Release one read or write hold under a fair policy.
--
-- KEYS[1]..KEYS[8] and ARGV[1]..ARGV[7] as in fair_lib.lua, and
-- KEYS[9] the attempt latch of the hold being released
-- KEYS[10] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- ARGV[8] "del" to drop the attempt latch, "abort" to mark it aborted
--
-- Returns nil when the owner held no such hold (or it had expired), 0 when
-- the owner still holds (reentrant holds remain), 1 when its last hold of
-- that mode was released. A retry with the same request id returns the
-- first call's answer from the latch.
--
-- Invariant: when a write ends under phase-fair, every reader waiting at that
-- moment is admitted ahead of the next writer; the release wakes exactly who
-- may enter now (see wake()).
local latched = redis.call('get', KEYS[10])
if latched then
  return tonumber(latched)
end
if ARGV[8] == 'abort' then
  redis.call('set', KEYS[9], 'aborted', 'px', ARGV[6])
else
  redis.call('del', KEYS[9])
end
purge()
local result
if ARGV[2] == 'w' then
  if redis.call('hget', S, 'writer') ~= owner then
    return nil
  end
  if redis.call('hincrby', S, 'wcount', -1) > 0 then
    result = 0
  else
    redis.call('hdel', S, 'writer', 'wcount', 'wdeadline')
    if pf and redis.call('zcard', W) > 0 then
      redis.call('zunionstore', A, 2, A, W, 'aggregate', 'max')
      redis.call('del', W)
      redis.call('pexpireat', A, tonumber(redis.call('hget', S, 'horizon')))
    end
    result = 1
  end
else
  local reads = tonumber(redis.call('hget', S, 'r:' .. owner))
  if not reads then
    return nil
  end
  if reads > 1 then
    redis.call('hincrby', S, 'r:' .. owner, -1)
    result = 0
  else
    redis.call('hdel', S, 'r:' .. owner)
    redis.call('zrem', R, owner)
    result = 1
  end
end
if result == 1 then
  wake()
  tidy()
end
redis.call('set', KEYS[10], result, 'px', ARGV[6])
return result
