-- Shared state machine of the writer-preferring and phase-fair policies.
-- Every fair_* script is common.lua, this file, then the operation's own.
--
-- KEYS[1] S: state hash "fairrw:<len>:{N}": policy, writer, wcount,
--            wdeadline, wtoken (the writer's fencing token), wgrant ("1":
--            the write was granted on the writer's behalf by a release and
--            not taken up yet; see grant), seq (queue
--            sequence), turned ("1": a reader was turned away since the
--            last "r" message), "q:<owner>" = "<deadline>:<lease>" of a
--            waiting writer (its entry's deadline, the lease it asked for),
--            horizon (ms, server time: S's own expiry is at least this; see
--            hset_until), busy ("1": a write of this file made or changed S;
--            absent only while the fast path alone wrote S, see
--            fair_acquire_fast.lua)
-- KEYS[2] R: readers zset, owner -> read lease deadline (ms, server time)
-- KEYS[3] Q: waiting writers zset, owner -> sequence (FIFO order)
-- KEYS[4] W: phase-fair only: waiting readers, owner -> deadline
-- KEYS[5] A: phase-fair only: readers admitted ahead of the next writer
-- KEYS[6] F: the last fencing token "fairrw:<len>:{N}:fence" (common.lua)
-- KEYS[7] C: wake-up channel "fairrw:<len>:{N}:wake"
-- KEYS[8] X: the Redisson hash N, to refuse a name held by that policy
-- KEYS[9] M: the owner's give-up marker "fairrw_attempt:{N}:<owner>"
-- ARGV[1] policy and protocol: "writer-preferring/3" or "phase-fair/3" (a
--         lock's state records it: a state recording anything else, another
--         policy or another protocol, refuses the acquire)
-- ARGV[2] mode: "r" or "w"
-- ARGV[3] owner "<client UUID>:<owner id>"
-- ARGV[4] lease in milliseconds
-- ARGV[5] queue lease in milliseconds (how long a waiter's entry lives
--         unless the waiter refreshes it by trying again)
-- ARGV[6] the call's stamp (ms, the client's clock)
-- ARGV[7] the call's window in ms (see common.lua)
-- ARGV[8] publish command: "publish" or "spublish"
--
-- Messages on C: "g:<token>:<owner>" the writer owner was granted the lock
-- by a release (it holds it now, with that token); "r" every waiting reader
-- may enter.
--
-- Returns: nothing itself; it defines the helpers the operations use.
--
-- Invariant: every entry carries a deadline on the server's clock, and an
-- entry whose deadline passed counts for nothing (passed: now > deadline,
-- never now = deadline: the clock is read in whole milliseconds, floored,
-- so a deadline set at now + lease may lie up to 1 ms before the holder's
-- own, which counts from the moment it sent the attempt): a crashed reader, writer
-- or waiting writer blocks no one past its lease. Dead entries are dropped
-- lazily, where they would block someone (a dead writer when S is read, the
-- readers when all of them are dead, a waiting writer when it is first), so
-- no call scans the queue or the holders: its cost does not grow with them.
-- Every key lives at least until the latest deadline of its own entries
-- (see cover), and all of them go when the lock is idle. S may outlive its
-- latest deadline by up to half the lease that moved its expiry last (see
-- hset_until): a lock left by a crashed holder or waiter is gone from
-- Redis that much later than its entries stopped counting. When a hold ends
-- and the lock is free, the release itself grants the writer at the head of
-- the queue; a grant made on a waiter's behalf lasts no longer than its
-- queue entry would have, unless the waiter takes it up.
local S, R, Q, W, A, F, C, X, M = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local policy, owner = ARGV[1], ARGV[3]
local lease, qlease = tonumber(ARGV[4]), tonumber(ARGV[5])
local pf = string.sub(policy, 1, 6) == 'phase-'
-- Every operation of this file may publish on C: refused, it fails here,
-- before any write (common.lua).
local refused = publish_refused(ARGV[8], C)
if refused then
  return refused
end
local now = now_ms() -- common.lua

-- st holds the state fields every call needs, read by load() in one HMGET.
-- A key of another type at S fails the script there, before any write.
-- It also keeps what a call learned that spares a command later: bare (no
-- R, Q, W or A existed: see mismatch), q_existed (Q existed and nothing
-- removed from it since), no_readers and no_admitted (a release knows
-- there is no live entry in R, A: see fair_unlock.lua).
local st
local function load()
  local v = redis.call('hmget', S, 'policy', 'writer', 'wcount', 'wdeadline', 'wtoken', 'turned', 'q:' .. owner, 'horizon', 'wgrant', 'busy')
  st = {
    existed = v[1] ~= false, -- S exists (every S records its policy)
    policy = v[1], writer = v[2], wcount = tonumber(v[3]), wdeadline = tonumber(v[4]),
    wtoken = v[5], turned = v[6], entry = v[7], horizon = tonumber(v[8]), wgrant = v[9] == '1',
    busy = v[10] ~= false,
  }
end

-- hset writes fields of S, recording the policy with the first write to a
-- lock that has none recorded (a new S), and marking S busy: only the fast
-- paths write S without "busy" (see fair_acquire_fast.lua).
local function hset(...)
  if not st.policy then
    st.policy, st.busy = policy, true
    return redis.call('hset', S, 'policy', policy, 'busy', 1, ...)
  end
  if not st.busy then
    st.busy = true
    return redis.call('hset', S, 'busy', 1, ...)
  end
  return redis.call('hset', S, ...)
end

-- cover makes key live at least until deadline (ms, server time), never
-- shortening it: GT leaves a later expiry alone, and a key just created
-- (no TTL, which GT treats as infinite) gets one. new: the caller created
-- the key in this call, so it has no expiry yet. old: the caller knows the
-- key existed before the call (and was not emptied since), so it has an
-- expiry already (every write that creates a key sets one); so has S when
-- it existed before the call.
local function cover(key, deadline, new, old)
  if new then -- the caller knows the key has just been created
    redis.call('pexpireat', key, deadline)
  elseif redis.call('pexpireat', key, deadline, 'GT') == 0 and not old and not (key == S and st.existed)
      and redis.call('pttl', key) == -1 then
    redis.call('pexpireat', key, deadline)
  end
end

-- hset_until writes fields of S (as hset) and makes S live at least until
-- deadline. S keeps its own horizon, a lower bound on its expiry read with
-- the rest of S: when it covers deadline already nothing more is sent;
-- otherwise S's expiry is moved to deadline + span/2 (span: the lease of
-- the entry written), and the horizon with it. So a hold renewed every
-- third of its lease moves S's expiry every other round, and a queue
-- refreshed by its waiters' attempts moves it once per half a queue lease.
-- The horizon never exceeds S's expiry: it is written only with a
-- PEXPIREAT at least as late (which GT or a new key's first expiry makes
-- happen), an expiry only ever moves later, and a deleted or expired S
-- takes its horizon with it. new: S is created in this call.
local function hset_until(deadline, span, new, ...)
  if not new and st.horizon and st.horizon >= deadline then
    return hset(...)
  end
  local h = deadline + math.floor(span / 2)
  hset('horizon', h, ...)
  st.horizon = h
  cover(S, h, new)
end

-- fit makes S live as long as a write granted after its owner queued
-- (deadline, span: its lease) when nothing else of the lock is left (no
-- reader, queue, waiting or admitted reader, nor one turned away): S's
-- horizon covered the owner's queue entry, a queue lease on, which the
-- write would otherwise keep S alive for, up to one and a half queue
-- leases after a short lease ran out. Only a grant from the queue calls it:
-- one EXISTS, whatever waits.
local function fit(deadline, span)
  if st.turned or redis.call('exists', R, Q, W, A) ~= 0 then
    return
  end
  local h = deadline + math.floor(span / 2)
  if st.horizon and st.horizon <= h then
    return
  end
  redis.call('hset', S, 'horizon', h)
  redis.call('pexpireat', S, h)
  st.horizon = h
end

-- mismatch returns an error reply when the name is held under another
-- policy (checked before anything is written), and otherwise whether the
-- owner's give-up marker M may exist (the caller checks it then): on a new
-- lock one EXISTS asks for the Redisson hash and the marker at once.
local function mismatch()
  if st.policy then
    if st.policy ~= policy then
      return redis.error_reply('FAIRRW_POLICY lock is held under policy ' .. st.policy)
    end
    return nil, true
  end
  -- One EXISTS asks for the Redisson hash, the marker, and keys at the
  -- lock's other names: a new lock normally has none of them.
  if redis.call('exists', X, M, R, Q, W, A) == 0 then
    st.bare = true -- no reader, waiter or admitted reader: spares looking
    st.q_existed = false
    return nil, false
  end
  for _, k in ipairs({R, Q, W, A}) do
    local kind = redis.call('type', k).ok
    if kind ~= 'none' and kind ~= 'zset' then
      return redis.error_reply('WRONGTYPE a key of another kind is stored at ' .. k)
    end
  end
  if redis.call('exists', X) == 1 then
    -- A hash without "mode" is an RLock's; anything else at N (a Redisson
    -- read-write lock, or a key of another type) is refused as Redisson's.
    if redis.call('type', X).ok == 'hash' and redis.call('hexists', X, 'mode') == 0 then
      return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson-mutex (a Redisson RLock)')
    end
    return redis.error_reply('FAIRRW_POLICY lock is held under policy redisson')
  end
  return nil, true
end

-- WRITER_FIELDS are the fields of the write hold, deleted when it ends.
local WRITER_FIELDS = {'writer', 'wcount', 'wdeadline', 'wtoken', 'wgrant'}

-- end_write (phase-fair) runs when a write ends, however it ends: released,
-- forced, or expired. Every reader waiting at that moment is admitted ahead
-- of the next writer, and told so. Returns whether any was.
local function end_write()
  if not pf or st.bare or redis.call('exists', W) == 0 then
    return false
  end
  redis.call('zunionstore', A, 2, A, W, 'aggregate', 'max')
  redis.call('del', W)
  cover(A, tonumber(redis.call('zrange', A, -1, -1, 'withscores')[2]), true)
  redis.call(ARGV[8], C, 'r')
  st.no_admitted = false
  return true
end

-- drop_writer deletes the write hold's fields and runs end_write.
local function drop_writer()
  redis.call('hdel', S, unpack(WRITER_FIELDS))
  st.writer, st.wcount, st.wdeadline, st.wtoken, st.wgrant = false, nil, nil, false, false
  end_write()
end

-- settle drops the writer if its lease ran out: an expired write ends as a
-- released one does (end_write), so the policy's order holds either way.
local function settle()
  if st.writer and not (st.wdeadline and st.wdeadline >= now) then
    drop_writer()
  end
end

-- entry parses a queue entry "<deadline>:<lease>"; a dead one is nil.
local function entry(e)
  if not e then
    return nil
  end
  local d, l = string.match(e, '^(%d+):(%d+)$')
  d = tonumber(d)
  if d and d >= now then
    return d, tonumber(l)
  end
  return nil
end

-- read_deadline is owner's live read deadline, or nil.
local function read_deadline(o)
  if st.bare then
    return nil
  end
  local d = tonumber(redis.call('zscore', R, o))
  if d and d >= now then
    return d
  end
  return nil
end

-- readers_alive says whether a live reader holds; when every reader is
-- dead, their entries go (one command, whatever their number).
local function readers_alive()
  if st.bare or st.no_readers then
    return false
  end
  local top = redis.call('zrange', R, -1, -1, 'withscores')
  if not top[2] then
    return false
  end
  if tonumber(top[2]) >= now then
    return true
  end
  redis.call('del', R)
  return false
end

-- admitted_alive (phase-fair): whether a reader admitted at the end of the
-- last write has yet to enter.
local function admitted_alive()
  if st.bare or st.no_admitted then
    return false
  end
  local top = redis.call('zrange', A, -1, -1, 'withscores')
  if not top[2] then
    return false
  end
  if tonumber(top[2]) >= now then
    return true
  end
  redis.call('del', A)
  return false
end

-- head returns the live writer at the head of the queue with its entry's
-- deadline and lease, dropping dead heads on the way.
local function head()
  if st.bare then
    return nil
  end
  while true do
    local h = redis.call('zrange', Q, 0, 0)[1]
    if not h then
      return nil
    end
    local e = h == owner and st.entry or redis.call('hget', S, 'q:' .. h)
    local d, l = entry(e)
    if d then
      return h, d, l
    end
    redis.call('zrem', Q, h)
    st.q_existed = nil -- Q may be gone now
    redis.call('hdel', S, 'q:' .. h)
  end
end

-- enqueue queues writer o, which asked for lease l (ms), at the tail of
-- the queue with an entry of a queue lease, as its refused attempt does
-- (fair_acquire.lua); the caller knows o has no entry.
local function enqueue(o, l)
  local deadline = now + qlease
  hset_until(deadline, qlease, false, 'q:' .. o, deadline .. ':' .. l)
  redis.call('zadd', Q, redis.call('hincrby', S, 'seq', 1), o)
  cover(Q, deadline)
  st.bare, st.q_existed = false, nil
end

-- dequeue removes owner o's queue entry.
local function dequeue(o)
  redis.call('zrem', Q, o)
  st.q_existed = nil -- Q may be gone now
  redis.call('hdel', S, 'q:' .. o)
end

-- grant gives the write to the queued writer h (entry deadline d) on its
-- behalf and tells it so. Its token reserves RESERVE tokens (common.lua):
-- a queued writer may be a cohort's leader, whose Client passes the write
-- on (its release closes the range). st.fence is F's value when the
-- caller knows it (a release that just closed its range), else nil. The grant lasts until d, as long as its entry
-- would have: a waiter that is gone blocks no one longer than its entry
-- would have. A waiter that counts its lease from the grant (one that asked
-- for a lease of its own, or for replicas) takes the grant up with an
-- attempt, and so does any first-hold attempt of its owner that comes
-- first (see write in fair_acquire.lua): that sets the hold to its lease
-- from then on; wgrant marks a grant not taken up yet. Returns h and
-- the grant's fencing token.
local function grant(h, d)
  local token = mint(F, st.fence, RESERVE) -- common.lua
  st.fence = nil
  local t = string.format('%.0f', token)
  dequeue(h)
  local deadline = d
  hset('writer', h, 'wcount', 1, 'wdeadline', deadline, 'wtoken', t, 'wgrant', 1)
  st.writer, st.wcount, st.wdeadline, st.wtoken, st.wgrant = h, 1, deadline, t, true
  redis.call(ARGV[8], C, 'g:' .. t .. ':' .. h)
  return h, t
end

-- free says whether no one holds the lock: no live writer, reader, or
-- (phase-fair) reader admitted ahead of the next writer.
local function free()
  return not st.writer and not readers_alive() and not (pf and admitted_alive())
end

-- next lets in whoever is next once the lock may be free: the writer at
-- the head of the queue (granted here), else every reader turned away.
-- Returns the granted writer and its token, if any.
local function next_holder()
  if st.writer then
    return nil
  end
  local vacate = function()
    if st.vacated then
      st.vacated = false
      redis.call('hdel', S, unpack(WRITER_FIELDS))
    end
  end
  if pf and admitted_alive() then
    vacate()
    return nil -- they go first; the last of them lets the next in
  end
  local h, d, l = head()
  if h then
    if readers_alive() then
      vacate()
      return nil -- the last reader's release grants it
    end
    st.vacated = false
    return grant(h, d)
  end
  vacate()
  if st.turned then
    redis.call('hdel', S, 'turned')
    redis.call(ARGV[8], C, 'r')
  end
  return nil
end

-- bound is how long a refused waiter may sleep at most: until the earliest
-- deadline that could free its way (the writer's, a reader's, an admitted
-- reader's, the head waiter's hd), or a queue lease.
local function bound(hd)
  local earliest = now + qlease
  if st.writer then
    -- Only the writer's own reads can hold beside it: its end comes first.
    return math.max(math.min(earliest, st.wdeadline) - now + 1, 1)
  end
  if hd then earliest = math.min(earliest, hd) end
  local first = redis.call('zrange', R, 0, 0, 'withscores')
  if first[2] then earliest = math.min(earliest, tonumber(first[2])) end
  if pf then
    local adm = redis.call('zrange', A, 0, 0, 'withscores')
    if adm[2] then earliest = math.min(earliest, tonumber(adm[2])) end
  end
  return math.max(earliest - now + 1, 1) -- an entry counts until now > deadline
end

-- tidy deletes the lock's keys once no one holds or waits (the last
-- token lives on at F for a second).
local function tidy()
  if not st.writer and redis.call('exists', R, Q, W, A) == 0 then
    redis.call('del', S)
  end
end
