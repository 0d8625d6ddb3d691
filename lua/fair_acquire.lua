-- Take a read or the write under the writer-preferring or phase-fair policy.
--
-- Composed after fair_acquire_fast.lua (lua.FairAcquire), which grants a
-- first hold on an idle lock (and returns its token alone, not the
-- {1, token} below).
--
-- KEYS[1]..KEYS[9] and ARGV[1]..ARGV[8] as in fair_lib.lua, and
-- ARGV[9]  "1" to queue up when refused (Lock, RLock), "0" not to (Try*)
-- ARGV[10] 0 for an owner's first hold; n > 0 for a further hold of an
--          owner that holds the lock, which makes n its count in that mode.
--          A first hold that finds a grant a release made on the owner's
--          behalf (see grant in fair_lib.lua) takes it up: the hold then
--          lasts exactly the lease from now, neither the entry's deadline
--          nor less
-- ARGV[11] "1": refused, tell this waiter "r" when the way is clear though
--          it keeps no queue entry (a quorum Lock's round); "0": a TryLock,
--          whose refusal changes nothing
-- ARGV[12] the tokens a write granted by this attempt reserves, its own
--          included (1 to RESERVE, see mint in common.lua): more than 1
--          for a cohort's leader whose Client may pass the write on; a
--          grant made on the writer's behalf by a release reserves RESERVE
--
-- Returns {1, token} when granted, {0, ms, us} when refused (ms: the longest
-- to wait before trying again; us: the server's clock in microseconds, so
-- that its waiter can tell a grant made after this refusal, whose token is
-- greater, from a stale message about an earlier one), {-1, 0} when the attempt is stale or its owner
-- was given up, {-2, 0} when a further hold's owner holds nothing any more;
-- an error reply "FAIRRW_POLICY ..." when the name is held under another
-- policy.
--
-- Invariant: a read is granted to an owner that holds the lock already
-- (a further hold never waits on a queued writer); otherwise, no other
-- writer holds it and no writer waits (phase-fair: or the reader was
-- admitted when the last write ended). The write is granted to the head of
-- the FIFO queue once no one else holds; write grants mint a new fencing
-- token. A retry never counts twice: a first hold that finds its owner
-- holding is a retry of a granted attempt (or a grant made on its behalf)
-- and takes it up, renewing it to its full lease; a further hold sets the
-- count rather than adding to it. A queued writer that finds the lock free
-- with another writer at the head grants that one on its behalf.
if stale(ARGV[6], ARGV[7]) then -- common.lua
  return {-1, 0}
end
load()
local refused, marked = mismatch()
if refused then
  return refused
end
if marked then
  -- One EXISTS asks for the marker (counted twice) and the queue: whether
  -- Q existed spares a PTTL when the queue is covered (see cover).
  local n = redis.call('exists', M, M, Q)
  if n >= 2 then
    return {-1, 0}
  end
  st.q_existed = n == 1
end
settle()
local queue, further = ARGV[9] == '1', tonumber(ARGV[10])
local granted

-- read takes (or renews) a read hold of owner.
local function read()
  local deadline = now + lease
  local token = last_token(F) -- before any write
  redis.call('zadd', R, 'GT', deadline, owner)
  cover(R, deadline, st.bare) -- a bare lock had no R: it is new
  if pf and not st.bare then
    redis.call('zrem', A, owner)
    redis.call('zrem', W, owner)
  end
  st.bare = false
  if not st.policy then -- a new lock: record its policy for a lease
    hset_until(deadline, lease, true, 'seq', 0)
  elseif not st.busy then
    -- R has another entry than a fast path's only one now (see
    -- fair_unlock_fast.lua): S says so.
    redis.call('hset', S, 'busy', 1)
    st.busy = true
  end
  return token
end

-- write renews the owner's write hold, count holds in all. A first hold
-- that takes up a grant made on the owner's behalf (wgrant) sets the hold
-- to exactly the lease from now: the Lease it returns counts from this
-- attempt, and Redis keeps it no longer. No further hold of the owner
-- counts on a later deadline then: a further hold clears wgrant, so a late
-- copy of an earlier attempt only extends; a watchdog renewal extends by
-- the same lease as the owner's attempts ask for.
local function write(count)
  local token = tonumber(st.wtoken) or last_token(F)
  if st.wgrant then
    st.wgrant = false
    if further <= 0 then
      hset_until(now + lease, lease, false, 'wcount', count, 'wdeadline', now + lease, 'wgrant', 0)
      fit(now + lease, lease) -- fair_lib.lua
      return token
    end
    local deadline = math.max(now + lease, st.wdeadline)
    hset_until(deadline, lease, false, 'wcount', count, 'wdeadline', deadline, 'wgrant', 0)
    return token
  end
  local deadline = math.max(now + lease, st.wdeadline)
  hset_until(deadline, lease, false, 'wcount', count, 'wdeadline', deadline)
  return token
end

-- turned records that a waiter without a queue entry was refused (an RLock,
-- or a quorum Lock's round; never a TryLock): the release that leaves no
-- writer holding or waiting tells it "r".
local function turned()
  if not st.turned and (queue or ARGV[11] == '1') then
    if st.policy then
      hset('turned', 1)
    else
      -- The state had expired under live readers (it lives as long as the
      -- first reader's lease): the new hash needs an expiry of its own, as
      -- long as a waiter's entry would live.
      hset_until(now + qlease, qlease, true, 'turned', 1)
    end
    st.turned = '1'
  end
end

if further > 0 then
  if ARGV[2] == 'r' and (st.writer == owner or read_deadline(owner)) then
    granted = read()
  elseif ARGV[2] == 'w' and st.writer == owner then
    granted = write(further)
  else
    return {-2, 0}
  end
elseif ARGV[2] == 'r' then
  local admit = read_deadline(owner) ~= nil -- a retry of this first hold, which was granted
  if not admit and not st.writer then
    if pf and not st.bare then
      local adm = tonumber(redis.call('zscore', A, owner))
      admit = adm ~= nil and adm >= now
    end
    admit = admit or head() == nil
  end
  if admit then
    granted = read()
  else
    if queue and pf then
      redis.call('zadd', W, now + qlease, owner)
      cover(W, now + qlease)
    end
    turned()
  end
elseif st.writer == owner then -- a retry of this first hold, or a grant made on its behalf
  granted = write(st.wcount)
else
  local queued = entry(st.entry) ~= nil
  if st.entry and not queued then
    dequeue(owner) -- its entry ran out: it lost its place
  end
  local h, hd
  if st.policy and not st.writer then -- a new lock has no queue; a held one waits for its release
    h, hd = head()
  end
  local open = not st.writer and free()
  if open and (h == owner or (not h and not queued)) then
    local deadline = now + lease
    granted = mint(F, nil, ARGV[12]) -- common.lua
    if queued then
      dequeue(owner)
    end
    hset_until(deadline, lease, not st.policy, 'writer', owner, 'wcount', 1, 'wdeadline', deadline,
      'wtoken', string.format('%.0f', granted))
    if queued then
      fit(deadline, lease) -- fair_lib.lua
    end
  else
    if open and h then
      -- The lock is free and its next writer waits (its grant was lost
      -- with a holder that expired): grant it on its behalf.
      grant(h, hd)
      h, hd = nil, nil
    end
    if not (queue or queued) then
      turned() -- a TryLock (a quorum's round): told "r" when the way is clear
    else
      local deadline = now + qlease
      hset_until(deadline, qlease, false, 'q:' .. owner, deadline .. ':' .. ARGV[4])
      if not queued then
        redis.call('zadd', Q, redis.call('hincrby', S, 'seq', 1), owner)
      end
      cover(Q, deadline, st.q_existed == false, st.q_existed)
    end
  end
  if not granted then
    return {0, bound(hd), now_us()}
  end
end

if granted then
  return {1, granted}
end
return {0, bound(nil), now_us()}
