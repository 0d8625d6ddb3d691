-- Renew many holds of one client under a fair policy, in one call.
--
-- KEYS[1], KEYS[3], ... (KEYS[2i-1]) entry i's state hash "fairrw:<len>:{N}"; KEYS[2i] its readers
-- zset (all keys of one call share a slot)
-- ARGV[1]    lease in milliseconds
-- ARGV[2i]   entry i's mode: "w" or "r"
-- ARGV[2i+1] entry i's owner "<client UUID>:<owner id>"
--
-- Returns an array with one integer per entry: 1 when the hold is alive and
-- was extended to now + lease, 0 when it is gone or its deadline passed.
--
-- Invariant: only the caller's own holds are extended; a dead hold is
-- never revived; a key's expiry is only ever moved later. A renewal costs
-- three commands per hold: it reads the hold, extends it, and extends the
-- one key that keeps it (the state hash for a write, the readers zset for
-- a read).
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local deadline = now + tonumber(ARGV[1])

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
    local v = redis.call('hmget', S, 'writer', 'wdeadline')
    local wd = tonumber(v[2])
    if v[1] == owner and wd and wd >= now then
      if deadline > wd then
        redis.call('hset', S, 'wdeadline', deadline)
      end
      cover(S)
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
