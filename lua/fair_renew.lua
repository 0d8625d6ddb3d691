-- Renew many holds of one client under a fair policy, in one call.
--
-- KEYS[1], KEYS[3], ... (KEYS[2i-1]) entry i's state hash "fairrw:{N}"; KEYS[2i] its readers zset
-- (all keys of one call share a slot)
-- ARGV[1]    lease in milliseconds
-- ARGV[2i]   entry i's mode: "w" or "r"
-- ARGV[2i+1] entry i's owner "<client UUID>:<owner id>"
--
-- Returns an array with one integer per entry: 1 when the hold is alive and
-- was extended to now + lease, 0 when it is gone or its deadline passed.
--
-- Invariant: only the caller's own holds are extended; a dead hold is
-- never revived.
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local deadline = now + tonumber(ARGV[1])
local result = {}
for i = 1, #KEYS / 2 do
  local S, R = KEYS[2 * i - 1], KEYS[2 * i]
  local mode, owner = ARGV[2 * i], ARGV[2 * i + 1]
  local alive = 0
  if mode == 'w' then
    local wd = tonumber(redis.call('hget', S, 'wdeadline'))
    if redis.call('hget', S, 'writer') == owner and wd and wd > now then
      redis.call('hset', S, 'wdeadline', math.max(wd, deadline))
      alive = 1
    end
  else
    local rd = tonumber(redis.call('zscore', R, owner))
    if rd and rd > now then
      redis.call('zadd', R, 'GT', deadline, owner)
      alive = 1
    end
  end
  if alive == 1 then
    local horizon = tonumber(redis.call('hget', S, 'horizon')) or 0
    if deadline > horizon then
      redis.call('hset', S, 'horizon', deadline)
      horizon = deadline
    end
    redis.call('pexpireat', S, horizon)
    redis.call('pexpireat', R, horizon)
  end
  result[i] = alive
end
return result
