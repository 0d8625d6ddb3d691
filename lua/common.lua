-- Helpers that every fairrw acquire and release script opens with (see
-- lua.Compose): the server's clock, the staleness rule and fencing tokens.
--
-- KEYS[1] and ARGV[1] are the including script's: this file reads neither,
-- only the keys and values its callers pass to its functions.
--
-- Returns: nothing itself; it defines clock(), now_us(), now_ms(), stale(), last_token(),
-- mint(), publish_refused(), and the releases' answered(), reply() and answer().
--
-- answered(latch, marker, abandon, markerpx, stamp, window), every
-- release's opening, takes its unlock latch
-- "redisson_unlock_latch:{N}:<request id>", the owner's give-up marker, "1"
-- when the owner is being given up (its marker is then set for markerpx ms,
-- so that no late copy of its attempts takes anything), and the release's
-- stamp and window. Returns the first answer when the request is a retry
-- (-1 stands for nil), -3 when it is stale (it changed nothing: its sender
-- must send it again with a new stamp, not take it for "not held"), and
-- nil otherwise (the script goes on). A give-up is never stale. reply(v)
-- turns such an answer into the script's reply (nil for -1); answer(latch,
-- result, px) stores a release's answer in its latch for a retry and
-- returns its reply.
--
-- Invariant: tokens minted for one name strictly increase, each above
-- the range reserved for the one before (see mint), a
-- command older than its window changes nothing (see stale), and a retried
-- release never applies twice (see answered). Tokens follow the server's
-- clock: they run ahead of it only by the ranges of write holds that ended
-- without their release (see mint).
--
-- stale(stamp, window): whether a command sent at stamp (ms on the
-- client's wall clock) reaches Redis after window ms. Its sender retries
-- it for a shorter time, and keeps trying to give its owner up for longer
-- (fairrw/abandon.go), so a copy this late has no one waiting for it: an
-- acquire must take nothing and a release must change nothing. This is
-- what makes a retry idempotent for as long as it can be sent, however
-- long Redis was paused or a connection stalled: no latch has to outlive
-- it. It assumes the client's and Redis's clocks differ by less than the
-- margin the window leaves (fairrw's unlock timeout).
--
-- mint(F, last, reserve): a new fencing token and its range: the token
-- and the reserve - 1 tokens above it (reserve 1, the default: the token
-- alone) are its holder's: a fair writer's Client hands the ones above to
-- the writers it passes the lock to without Redis (a cohort: see
-- fairrw/cohort.go; RESERVE, the most a grant reserves, is
-- wire.TokenReserve's copy). The token is the server's clock in
-- microseconds, or one more than the top of the last range if that is
-- higher; F then keeps the top of the new range. last, when given, is F's
-- value as the caller knows it; without it, F is read by the SET that
-- writes it (SET ... GET). The release that ends the holder's write closes
-- the range (fair_unlock.lua): F falls back to the highest token handed
-- out, which a read returns, and the next token follows it by one or
-- follows the clock. So tokens run ahead of the clock only by the ranges
-- left open, those of write holds that ended without their release
-- (expired, force-unlocked): at most RESERVE - 1 microseconds for each.
-- Tokens of one name strictly increase, above every reserved one, while F
-- lives, and F lives until the clock has passed the top of its range, and
-- a second more (see keep): once it expired, the clock has passed every
-- earlier token. No key outlives the lock by more than that.
local RESERVE = 64
local clock_s, clock_us
local function clock()
  -- One TIME per script: every helper reads the same instant.
  if not clock_s then
    local t = redis.call('time')
    clock_s, clock_us = tonumber(t[1]), tonumber(t[2])
  end
  return clock_s, clock_us
end

local function now_us()
  local s, us = clock()
  return s * 1000000 + us
end

local function now_ms()
  local s, us = clock()
  return s * 1000 + math.floor(us / 1000)
end

local function stale(stamp, window)
  return now_ms() > tonumber(stamp) + tonumber(window)
end

local function last_token(F)
  return tonumber(redis.call('get', F)) or 0
end

-- keep is how long F keeps top, the top of a range, at clock t (both in
-- us): a second (less a millisecond) past the moment the clock reaches it.
local function keep(top, t)
  return 1000 + math.floor(math.max(0, top - t) / 1000)
end

local function mint(F, last, reserve)
  reserve = tonumber(reserve) or 1
  local s, us = clock()
  local t = s * 1000000 + us
  last = tonumber(last)
  if not last then
    -- Write the clock's range and read the last one in one command; only
    -- a last range that reaches the clock (grants within its microseconds,
    -- or a range left open) costs a second write. Nothing reads F between
    -- the two.
    local top = t + reserve - 1
    last = tonumber(redis.call('set', F, string.format('%.0f', top), 'px', keep(top, t), 'get'))
    if not last or last < t then
      return t
    end
  end
  local token = math.max(last + 1, t)
  local top = token + reserve - 1
  redis.call('set', F, string.format('%.0f', top), 'px', keep(top, t))
  return token
end

-- publish_refused(cmd, channel): the error reply to return, before the
-- script's first write, when its ACL user may not publish to channel
-- (Redis 7's redis.acl_check_cmd). Redis checks a script's own commands and
-- keys before it runs it, but a PUBLISH only when the script reaches it,
-- after the writes before it, which a script cannot undo: a release would
-- be done and its waiters never told. nil when the user may, or when the
-- server has no such check (Redis before 7, miniredis): the error code is
-- NOPERM, as Redis's own refusals.
local function publish_refused(cmd, channel)
  if redis.acl_check_cmd == nil or redis.acl_check_cmd(cmd, channel, '') then
    return nil
  end
  return redis.error_reply('NOPERM this user has no permissions to ' .. cmd .. ' to the channel ' .. channel)
end

local function answered(latch, marker, abandon, markerpx, stamp, window)
  -- Even a first send looks: a copy of it delayed in the network may reach
  -- Redis after its retry answered.
  local v = redis.call('get', latch)
  if v ~= false then
    return tonumber(v)
  end
  -- A give-up is never stale: it only removes, and its owner is never used
  -- again, so it is right whenever it runs; a hold or queue entry written
  -- before Redis paused needs it after.
  if abandon ~= '1' and stale(stamp, window) then
    return -3
  end
  if abandon == '1' then
    redis.call('set', marker, 1, 'px', markerpx)
  end
  return nil
end

local function reply(result)
  if result == -1 then
    return nil
  end
  return result
end

local function answer(latch, result, px)
  redis.call('set', latch, result, 'px', px)
  return reply(result)
end
