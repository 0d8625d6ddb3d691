-- Raise a lock's fencing counter to at least a token (quorum locking).
--
-- KEYS[1] the fencing counter "fairrw_fence:{N}"
-- ARGV[1] the token a quorum write grant was given: the highest counter of
--         the nodes that granted it
--
-- Returns the counter's value after the call.
--
-- Invariant: a counter never goes down. Once every node of a write grant's
-- majority holds at least its token, any later majority shares one of those
-- nodes, whose INCR then yields more: quorum tokens keep increasing even
-- when the nodes' counters had drifted apart.
local token = tonumber(ARGV[1])
local current = tonumber(redis.call('get', KEYS[1])) or 0
if current < token then
  redis.call('set', KEYS[1], token)
  return token
end
return current
