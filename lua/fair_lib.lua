-- Shared state machine of the writer-preferring and phase-fair policies.
-- Every fair_* script is common.lua, this file, then the operation's own.
--
-- KEYS[1] S: state hash "fairrw:<len>:{N}": policy, writer, wcount,
--            wdeadline, wtoken (the writer's fencing token), seq (queue
--            sequence), horizon (latest deadline set), "r:<owner>" = read
--            holds of owner, "q:<owner>" = queue deadline
-- KEYS[2] R: readers zset, owner -> read lease deadline (ms, server time)
-- KEYS[3] Q: waiting writers zset, owner -> sequence (FIFO order)
-- KEYS[4] W: phase-fair only: waiting readers, owner -> deadline
-- KEYS[5] A: phase-fair only: readers admitted ahead of the next writer
-- KEYS[6] F: the last fencing token "fairrw:<len>:{N}:fence" (common.lua)
-- KEYS[7] C: wake-up channel "fairrw:<len>:{N}:wake"
-- KEYS[8] X: the Redisson hash N, to refuse a name held by that policy
-- KEYS[9] M: the owner's give-up marker "fairrw_attempt:{N}:<owner>"
-- ARGV[1] policy: "writer-preferring" or "phase-fair"
-- ARGV[2] mode: "r" or "w"
-- ARGV[3] owner "<client UUID>:<owner id>"
-- ARGV[4] lease in milliseconds
-- ARGV[5] queue lease in milliseconds (how long a waiter's entry lives
--         unless the waiter refreshes it by trying again)
-- ARGV[6] the call's stamp (ms, the client's clock)
-- ARGV[7] the call's window in ms (see common.lua)
-- ARGV[8] publish command: "publish" or "spublish"
--
-- Returns: nothing itself; it defines the helpers the operations use.
--
-- Invariant: every entry carries a deadline on the server's clock; purge()
-- drops the dead ones first, so a crashed reader, writer or waiting writer
-- blocks no one past its lease. Every key lives at least until the latest
-- deadline set in it (the horizon), and all of them go when the lock is idle.
local S, R, Q, W, A, F, C, X, M = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local policy, owner = ARGV[1], ARGV[3]
local lease, qlease = tonumber(ARGV[4]), tonumber(ARGV[5])
local pf = policy == 'phase-fair'
local now = now_ms() -- common.lua

-- mismatch returns an error reply when the name is held under another
-- policy, and otherwise whether the lock has no policy recorded yet (the
-- caller records it, once every key has been read: a script's writes are
-- not rolled back when a later command fails on a foreign value).
local function mismatch()
  local held = redis.call('hget', S, 'policy')
  if held and held ~= policy then
    return redis.error_reply('FAIRRW_POLICY lock is held under policy ' .. held)
  end
  if redis.call('exists', X) == 1 then
    -- A hash without "mode" is an RLock's; anything else at N (a Redisson
    -- read-write lock, or a key of another type) is refused as Redisson's.
    if redis.call('type', X).ok == 'hash' and redis.call('hexists', X, 'mode') == 0 then
      return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson-mutex (a Redisson RLock)')
    end
    return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson')
  end
  return nil, not held
end

-- purge drops holders and waiters whose deadline has passed (waiting
-- writers from the head of the queue).
local function purge()
  local wd = tonumber(redis.call('hget', S, 'wdeadline'))
  if wd and wd <= now then
    redis.call('hdel', S, 'writer', 'wcount', 'wdeadline', 'wtoken')
  end
  local dead = redis.call('zrangebyscore', R, '-inf', now)
  if #dead > 0 then
    for _, o in ipairs(dead) do
      redis.call('hdel', S, 'r:' .. o)
    end
    redis.call('zremrangebyscore', R, '-inf', now)
  end
  -- Waiting writers are dropped from the head only: the head is all that
  -- admission looks at (a live head means a writer waits), so a dead entry
  -- further back can wait until it is first. Each entry is dropped once, so
  -- a call costs no more with 256 writers queued than with 8.
  while true do
    local head = redis.call('zrange', Q, 0, 0)[1]
    if not head then
      break
    end
    local qd = tonumber(redis.call('hget', S, 'q:' .. head))
    if qd and qd > now then
      break
    end
    redis.call('zrem', Q, head)
    redis.call('hdel', S, 'q:' .. head)
  end
  if pf then
    redis.call('zremrangebyscore', W, '-inf', now)
    redis.call('zremrangebyscore', A, '-inf', now)
  end
end

-- extend makes every key of the lock outlive deadline (ms, server time).
local function extend(deadline)
  local horizon = tonumber(redis.call('hget', S, 'horizon')) or 0
  if deadline > horizon then
    horizon = deadline
    redis.call('hset', S, 'horizon', horizon)
  end
  redis.call('pexpireat', S, horizon)
  redis.call('pexpireat', R, horizon)
  redis.call('pexpireat', Q, horizon)
  if pf then
    redis.call('pexpireat', W, horizon)
    redis.call('pexpireat', A, horizon)
  end
end

-- bound is how long a waiter may sleep at most: until the earliest deadline
-- that could free its way (a holder's or a waiter's ahead of it).
local function bound()
  local earliest = now + qlease
  local wd = tonumber(redis.call('hget', S, 'wdeadline'))
  if wd then earliest = math.min(earliest, wd) end
  local first = redis.call('zrange', R, 0, 0, 'withscores')
  if first[2] then earliest = math.min(earliest, tonumber(first[2])) end
  local head = redis.call('zrange', Q, 0, 0)
  if head[1] then
    local qd = tonumber(redis.call('hget', S, 'q:' .. head[1]))
    if qd then earliest = math.min(earliest, qd) end
  end
  if pf then
    local adm = redis.call('zrange', A, 0, 0, 'withscores')
    if adm[2] then earliest = math.min(earliest, tonumber(adm[2])) end
  end
  return math.max(earliest - now, 1)
end

-- wake tells the waiters who may enter now: every reader admitted or
-- waiting (phase-fair, after a write), else the writer at the head.
local function wake()
  if redis.call('hexists', S, 'writer') == 1 then
    return
  end
  if pf and redis.call('zcard', A) > 0 then
    redis.call(ARGV[8], C, 'r')
    return
  end
  local head = redis.call('zrange', Q, 0, 0)
  if head[1] then
    if redis.call('zcard', R) == 0 then
      redis.call(ARGV[8], C, 'w:' .. head[1])
    end
    return
  end
  -- No writer holds or waits: any reader turned away (by a writer that has
  -- since left the queue) may enter now.
  redis.call(ARGV[8], C, 'r')
end

-- tidy deletes the lock's keys once no one holds or waits (the last
-- token lives on at F for a lease).
local function tidy()
  if redis.call('hexists', S, 'writer') == 0 and redis.call('zcard', R) == 0
      and redis.call('zcard', Q) == 0 and (not pf or (redis.call('zcard', W) == 0
      and redis.call('zcard', A) == 0)) then
    redis.call('del', S, R, Q, W, A)
  end
end

