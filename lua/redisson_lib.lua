-- Shared openings of the Redisson-format acquire and unlock scripts (the
-- read-write lock's read and write, and the RLock's). Each of those scripts
-- is this file followed by its own (see lua.Compose).
--
-- KEYS[1] and ARGV[1] are the including script's (KEYS[1] is always the
-- lock hash N); this file reads neither. replayed(latch, fair) takes the
-- attempt latch "fairrw_attempt:{N}:<id>" and the fair policies' state
-- "fairrw:{N}", which each script passes at its own KEYS positions.
--
-- Returns from replayed: nil when the attempt is new and no fair policy
-- holds the name (the script goes on); {-1, 0} when the attempt was given
-- up by its caller; {1, token} when it was granted before (a retry reports
-- the grant again); an error reply "FAIRRW_POLICY ..." when a fair policy
-- holds the name.
--
-- answered(latch, attempt, action, ttl), an unlock's opening, takes its
-- unlock latch "redisson_unlock_latch:{N}:<request id>", the attempt latch
-- of the hold being released, the action "del" (drop that latch) or
-- "abort" (mark it aborted), and the attempt latch's lifetime in ms.
--
-- Returns from answered: the first answer of this unlock request when it
-- is a retry (the script returns it at once), nil otherwise (the attempt
-- latch has then been dropped or marked, and the script goes on).
--
-- Invariant: a retried attempt never counts a second hold, and an aborted
-- one takes nothing; a retried unlock never releases a second hold. Usually neither key exists: one EXISTS tells, and only
-- otherwise are they read one by one.
local function replayed(latch, fair)
  if redis.call('exists', latch, fair) == 0 then
    return nil
  end
  local v = redis.call('get', latch)
  if v == 'aborted' then
    return {-1, 0}
  end
  if v then
    return {1, tonumber(v)}
  end
  return redis.error_reply('FAIRRW_POLICY lock is held under policy ' .. (redis.call('hget', fair, 'policy') or 'fair'))
end

local function answered(latch, attempt, action, ttl)
  local v = redis.call('get', latch)
  if v ~= false then
    return tonumber(v)
  end
  if action == 'abort' then
    redis.call('set', attempt, 'aborted', 'px', ttl)
  else
    redis.call('del', attempt)
  end
  return nil
end
