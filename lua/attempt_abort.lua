-- Settle an acquire attempt whose caller gave up without learning its outcome.
--
-- KEYS[1] the attempt latch "fairrw_attempt:{N}:<attempt id>"
-- ARGV[1] attempt latch lifetime in milliseconds
--
-- Returns 1 when the attempt had been granted (the caller must now release
-- that hold, marking the latch aborted), 0 when it had not: the latch is then
-- marked aborted so that a late copy of the attempt takes nothing.
--
-- Invariant: after this script, no copy of the attempt can grant a hold that
-- its caller does not know about.
local latch = redis.call('get', KEYS[1])
if latch and latch ~= 'aborted' then -- a granted attempt's latch holds its token
  return 1
end
redis.call('set', KEYS[1], 'aborted', 'px', ARGV[1])
return 0
