-- Renew many holds of one client in one call (the watchdog's batch).
--
-- KEYS[i]    the lock hash of entry i (KEYS[1], KEYS[2], ...; all keys of
--            one call share a slot)
-- ARGV[1]   lease in milliseconds
-- ARGV[3i-1] entry i's kind: "w" for a write hold, "r" for read holds, "m"
--            for an RLock's holds (a Mutex)
-- ARGV[3i]   entry i's hash field: "<client>:<owner>:write" or "<client>:<owner>"
-- ARGV[3i+1] entry i's lease-key prefix "{N}:<client>:<owner>:rwlock_timeout"
--            (read entries only; empty otherwise)
--
-- Returns an array with one integer per entry: 1 when the owner still holds
-- and its holds were extended, 0 when they are gone (the caller reports the
-- leases lost).
--
-- Invariant: only this client's own holds are extended (Redisson 4.4+), so a
-- live client never keeps a crashed client's reads alive; a renewal never
-- shortens anything (Java sets the lease, which cuts a longer explicit hold
-- of the same owner short), and an owner is alive while its field is there,
-- whatever became of the lease key of one of its shorter holds.
local lease = tonumber(ARGV[1])

-- extend makes key live at least the lease; false when it does not exist.
local function extend(key)
  local left = redis.call('pttl', key)
  if left == -2 then
    return false
  end
  if left >= 0 and left < lease then
    redis.call('pexpire', key, lease)
  end
  return true
end

local result = {}
for i = 1, #KEYS do
  local kind, field, prefix = ARGV[3 * i - 1], ARGV[3 * i], ARGV[3 * i + 1]
  local holds = tonumber(redis.call('hget', KEYS[i], field))
  local alive = 0
  if holds ~= nil and holds > 0 then
    alive = 1
    if kind == 'r' then
      local any = false
      for k = 1, holds do
        any = extend(prefix .. ':' .. k) or any
      end
      if not any then -- the owner's keys all expired under a live hold: cover it again
        redis.call('set', prefix .. ':1', 1, 'px', lease)
      end
    end
    extend(KEYS[i])
  end
  result[i] = alive
end
return result
