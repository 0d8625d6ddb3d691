-- Renew many holds of one client in one call (the watchdog's batch).
--
-- KEYS[1] .. KEYS[n] the lock hash of entry i (all keys of one call share a slot)
-- ARGV[1]   lease in milliseconds
-- ARGV[3i-1] entry i's kind: "w" for a write hold, "r" for read holds, "m"
--            for an RLock's holds (a Mutex: Java's test, but the PTTL is
--            never cut below what is left, which a longer hold may need)
-- ARGV[3i]   entry i's hash field: "<client>:<owner>:write" or "<client>:<owner>"
-- ARGV[3i+1] entry i's lease-key prefix "{N}:<client>:<owner>:rwlock_timeout"
--            (read entries only; empty for writes)
--
-- Returns an array with one integer per entry: 1 when the holds are alive and
-- were extended, 0 when they are gone (the caller reports the lease lost).
--
-- Invariant: only this client's own holds are extended (Redisson 4.4+), so a
-- live client never keeps a crashed client's reads alive. A read entry is
-- alive only if every one of its lease keys still exists.
local lease = tonumber(ARGV[1])
local result = {}
for i = 1, #KEYS do
  local kind = ARGV[3 * i - 1]
  local field = ARGV[3 * i]
  local alive = 0
  if kind == 'w' then
    if redis.call('hexists', KEYS[i], field) == 1 then
      redis.call('pexpire', KEYS[i], lease)
      alive = 1
    end
  elseif kind == 'm' then
    if redis.call('hexists', KEYS[i], field) == 1 then
      redis.call('pexpire', KEYS[i], math.max(redis.call('pttl', KEYS[i]), lease))
      alive = 1
    end
  else
    local holds = tonumber(redis.call('hget', KEYS[i], field))
    if holds ~= nil and holds > 0 then
      alive = 1
      for k = 1, holds do
        if redis.call('pexpire', ARGV[3 * i + 1] .. ':' .. k, lease) == 0 then
          alive = 0
        end
      end
      if alive == 1 then
        redis.call('pexpire', KEYS[i], math.max(redis.call('pttl', KEYS[i]), lease))
      end
    end
  end
  result[i] = alive
end
return result
