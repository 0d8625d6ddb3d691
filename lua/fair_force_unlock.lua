-- Free a fair lock whatever its holders, in one mode only.
--
-- KEYS[1]..KEYS[8] and ARGV[1]..ARGV[7] as in fair_lib.lua (ARGV[2] is the
-- mode to free; ARGV[3] is unused).
--
-- Returns 1 when holders of that mode were removed, 0 otherwise.
--
-- Invariant: the other mode's holders and every waiter are kept; those who
-- may enter now are woken.
purge()
local freed = 0
if ARGV[2] == 'w' then
  if redis.call('hexists', S, 'writer') == 1 then
    redis.call('hdel', S, 'writer', 'wcount', 'wdeadline', 'wtoken')
    freed = 1
  end
elseif redis.call('hexists', S, 'writer') == 0 then
  for _, o in ipairs(redis.call('zrange', R, 0, -1)) do
    redis.call('hdel', S, 'r:' .. o)
    freed = 1
  end
  redis.call('del', R)
end
if freed == 1 then
  wake()
  tidy()
end
return freed
