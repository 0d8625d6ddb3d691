-- Renew many holds of one client under a fair policy, in one call.
--
-- KEYS[2i-1] entry i's state hash "fairrw:<len>:{N}" (KEYS[1], KEYS[3], ...)
-- KEYS[2i]   entry i's readers zset (all keys of one call share a slot)
-- ARGV[1]    lease in milliseconds
-- ARGV[2i]   entry i's mode: "w" or "r"
-- ARGV[2i+1] entry i's owner "<client UUID>:<owner id>"
--
-- Returns an array with one integer per entry: 1 when the hold is alive and
-- was extended to now + lease, 0 when it is gone or its deadline passed.
--
-- Invariant: only the caller's own holds are extended; a dead hold is
-- never revived; a key's expiry is only ever moved later, and never
-- below a deadline it keeps. A read's renewal costs three commands: it
-- reads the hold, extends it, and extends the readers zset. A write's
-- costs two, and a third every other round: the state hash keeps its own
-- horizon (a lower bound on its expiry, see hset_until in fair_lib.lua),
-- read with the hold; only when the new deadline passes it is the hash's
-- expiry moved, to half a lease past the deadline, so the next round (a
-- third of a lease later) finds it covered.
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local lease = tonumber(ARGV[1])
local deadline = now + lease
local horizon = deadline + math.floor(lease / 2)

-- cover as in fair_lib.lua: the key exists with an expiry here (it holds
-- the hold just renewed), so GT alone is enough unless its expiry is later.
local function cover(key)
  redis.call('pexpireat', key, deadline, 'GT')
end

local result = {}
for i = 1, #KEYS / 2 do
  local S, R = KEYS[2 * i - 1], KEYS[2 * i]
  local mode, owner = ARGV[2 * i], ARGV[2 * i + 1]
  local alive = 0
  if mode == 'w' then
    local v = redis.call('hmget', S, 'writer', 'wdeadline', 'horizon')
    local wd, h = tonumber(v[2]), tonumber(v[3])
    if v[1] == owner and wd and wd >= now then
      -- A deadline not moved is covered already (S outlives wd).
      if deadline > wd then
        if h and h >= deadline then
          redis.call('hset', S, 'wdeadline', deadline)
        else
          redis.call('hset', S, 'wdeadline', deadline, 'horizon', horizon)
          redis.call('pexpireat', S, horizon, 'GT')
        end
      end
      alive = 1
    end
  else
    local rd = tonumber(redis.call('zscore', R, owner))
    if rd and rd >= now then
      redis.call('zadd', R, 'GT', deadline, owner)
      cover(R)
      alive = 1
    end
  end
  result[i] = alive
end
return result
