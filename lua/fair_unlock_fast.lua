-- The fast path of a fair release: an owner's last release (it keeps no
-- other hold) of a hold that fair_acquire's fast path granted
-- (fair_acquire_fast.lua), while no one else holds or waits. It is a
-- script of its own, given only the keys and values it needs: a fair
-- script's cost on the server grows with every key and value it is sent,
-- and fair_unlock takes 11 and 18. The client sends it, instead of
-- fair_unlock, for a hold whose grant said it came from the fast path, and
-- sends fair_unlock, under the same request id, whenever this one answers
-- nil: it changed nothing then.
--
-- KEYS[1] S: the state hash "fairrw:<len>:{N}" (fair_lib.lua)
-- KEYS[2] R: its readers zset
-- KEYS[3] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- ARGV[1] mode: "r" or "w"
-- ARGV[2] owner "<client UUID>:<owner id>"
-- ARGV[3] the latch's lifetime in milliseconds
--
-- Returns 1 when it released the hold (no one was granted: no one
-- waited), the first answer of this request (1, 0 or -1, as fair_unlock
-- returns it) when an earlier copy answered it, and nil when it does not
-- apply: the caller then sends fair_unlock with the same request id, which
-- finds the answer in the latch if an earlier copy gave one.
--
-- Invariant: it applies only when S exists without "busy" (only the fast
-- path wrote it: no waiter, no turned-away reader, no other reader, no
-- further hold; see fair_acquire_fast.lua), so releasing frees the lock
-- and nothing is to be published or granted: the write's S (horizon =
-- wdeadline: S exists exactly while the write is alive), or the read's
-- entry (R's only one, and R expires with it), and S go. A last release
-- writes an absolute state, "the owner holds nothing", and the owner is
-- never used again (a given-up owner's release is fair_unlock's), so a
-- second copy of it changes nothing: it needs neither the staleness rule
-- nor a latch read first. Its answer goes to the latch with NX, once the
-- release is done: a copy that finds an answer there (its first copy
-- answered, here or in fair_unlock) returns that answer. S exists with
-- "horizon" whenever the fast path wrote it (a write's, equal to its
-- wdeadline until a renewal moves it; a read's, half a lease past it).
local v = redis.call('hmget', KEYS[1], 'writer', 'wdeadline', 'horizon', 'busy')
if v[3] and not v[4] then
  local done = false
  if ARGV[1] == 'w' then
    done = v[1] == ARGV[2] and v[3] == v[2] and redis.call('del', KEYS[1]) == 1
  elseif not v[1] then
    done = redis.call('zrem', KEYS[2], ARGV[2]) == 1 and redis.call('del', KEYS[1]) == 1
  end
  if done then
    -- SET NX rather than SET NX GET, which Redis before 7.0 refuses:
    -- only a copy that finds an answer there reads it.
    if redis.call('set', KEYS[3], '1', 'px', ARGV[3], 'nx') then
      return 1
    end
    return tonumber(redis.call('get', KEYS[3]))
  end
end
return nil
