-- The fast path of fair_acquire: a first hold on an idle lock. It runs
-- before common.lua and fair_lib.lua (see lua.FairAcquire), so when it
-- grants, none of their helpers is defined and no state table is built:
-- a handful of commands and no string building beyond the command
-- arguments. Whenever the lock is not idle it changes nothing and falls
-- through to the full script.
--
-- KEYS[1]..KEYS[9] and ARGV[1]..ARGV[12] as in fair_acquire.lua (KEYS[1]
-- S, KEYS[2] R, KEYS[3] Q, KEYS[4] W, KEYS[5] A, KEYS[6] F, KEYS[8] X,
-- KEYS[9] M; ARGV[1] policy and protocol, ARGV[2] mode, ARGV[3] owner, ARGV[4] lease,
-- ARGV[6] stamp, ARGV[7] window, ARGV[10] further, ARGV[12] the tokens a
-- write reserves).
--
-- Returns, when it applies, the grant's fencing token alone (an integer,
-- not fair_acquire.lua's {1, token}: the client learns from it that the
-- fast path granted the hold, so that its last release may be
-- fair_unlock_fast.lua's, and a bare integer costs Redis less to convert
-- than a table), or {-1, 0} when the attempt is stale; otherwise nothing
-- (the full script goes on).
--
-- Invariant: it grants only when none of S, X (Redisson's hash), M (the
-- owner's give-up marker), R, Q, W, A exists: no holder, no waiter, no
-- other policy, an owner not given up; one EXISTS tells. What it writes is
-- exactly what the full script would for that grant, less the fields it
-- needs not (seq, turned), and without "busy": S without "busy" says that
-- only the fast path wrote it, so that nobody else holds or waits
-- (fair_lib.lua marks S busy on every other write; fair_unlock_fast.lua
-- relies on it). A write's S expires exactly at the writer's deadline and
-- records that deadline as its horizon (see hset_until in fair_lib.lua):
-- while horizon = wdeadline and S is not busy, S exists exactly as long as
-- the write is alive. A read's R expires exactly at the reader's deadline
-- (it is R's only entry). TIME is read only once the lock is known idle:
-- the fencing token, the deadlines and the staleness rule need the
-- server's clock, and nothing else gives it.
if ARGV[10] == '0' and redis.call('exists', KEYS[1], KEYS[8], KEYS[9], KEYS[2], KEYS[3], KEYS[4], KEYS[5]) == 0 then
  local t = redis.call('time')
  local s, us = tonumber(t[1]), tonumber(t[2])
  local now = s * 1000 + math.floor(us / 1000)
  if now > tonumber(ARGV[6]) + tonumber(ARGV[7]) then -- stale (see common.lua)
    return {-1, 0}
  end
  local lease = tonumber(ARGV[4])
  local deadline = now + lease
  -- Every number Redis is given is a string made here once: Redis renders
  -- each Lua number argument with printf, which costs more than the rest.
  local d = tostring(deadline) -- %.14g: exact for a time in ms
  if ARGV[2] == 'w' then
    -- mint (common.lua): the clock in microseconds, or one more than the
    -- top of the last range if that is higher; F takes the top of the new
    -- range (ARGV[12] tokens: up to 64, common.lua's RESERVE, a second's
    -- keep). The token's text is the two fields of TIME, the second padded
    -- to 6 digits.
    local token = s * 1000000 + us
    local text = t[1] .. string.sub('00000', #t[2]) .. t[2]
    local reserve = tonumber(ARGV[12]) or 1
    local top = text
    if reserve > 1 then
      top = string.format('%.0f', token + reserve - 1)
    end
    local last = tonumber(redis.call('set', KEYS[6], top, 'px', '1000', 'get'))
    if last and last >= token then
      local t = token
      token = last + 1
      text = string.format('%.0f', token)
      redis.call('set', KEYS[6], string.format('%.0f', token + reserve - 1), 'px', 1000 + math.floor((token + reserve - 1 - t) / 1000))
    end
    redis.call('hset', KEYS[1], 'policy', ARGV[1], 'writer', ARGV[3], 'wcount', '1', 'wdeadline', d,
      'wtoken', text, 'horizon', d)
    redis.call('pexpireat', KEYS[1], d)
    return token
  end
  local token = tonumber(redis.call('get', KEYS[6])) or 0
  redis.call('zadd', KEYS[2], d, ARGV[3])
  redis.call('pexpireat', KEYS[2], d)
  local horizon = tostring(deadline + math.floor(lease / 2))
  redis.call('hset', KEYS[1], 'policy', ARGV[1], 'horizon', horizon)
  redis.call('pexpireat', KEYS[1], horizon)
  return token
end
