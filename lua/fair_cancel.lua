-- Withdraw a waiter that gives up (ctx done, Close) under a fair policy.
--
-- KEYS[1]..KEYS[8] and ARGV[1]..ARGV[7] as in fair_lib.lua.
--
-- Returns 1 when the owner had a queue entry (or a waiting or admitted
-- reader entry) and it was removed, 0 otherwise.
--
-- Invariant: a waiter that leaves blocks no one: if it was the head writer,
-- or the last admitted reader, the next in line is woken at once.
purge()
local removed = redis.call('zrem', Q, owner)
redis.call('hdel', S, 'q:' .. owner)
if pf then
  removed = removed + redis.call('zrem', W, owner) + redis.call('zrem', A, owner)
end
if removed > 0 then
  wake()
end
tidy()
return math.min(removed, 1)
