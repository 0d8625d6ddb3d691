-- Raise a lock's last fencing token to at least a token (quorum locking).
--
-- KEYS[1] the last fencing token "fairrw:<len>:{N}:fence"
-- ARGV[1] the token a quorum write grant was given: the highest of the
--         nodes that granted it
-- ARGV[2] how long to keep it, in ms (the write's lease)
--
-- Returns the token kept after the call.
--
-- Invariant: a token never goes down while it is kept. Once every node of
-- a write grant's majority holds at least its token, any later majority
-- shares one of those nodes, whose next mint then yields more: quorum tokens
-- keep increasing even when the nodes' clocks had drifted apart. (After the
-- key expired, the nodes' clocks have passed it: see common.lua.)
local token = tonumber(ARGV[1])
local current = tonumber(redis.call('get', KEYS[1])) or 0
if current < token then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  return token
end
return current
