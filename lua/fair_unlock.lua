-- Release one read or write hold under a fair policy, and set what its
-- owner still holds; or give an owner up (its acquire was abandoned).
--
-- An owner's last release of a hold the fast path granted goes first to
-- fair_unlock_fast.lua, a script of its own; this one is sent when that
-- one does not apply, under the same request id.
--
-- KEYS[1]..KEYS[9] and ARGV[1]..ARGV[8] as in fair_lib.lua, and
-- KEYS[10] the unlock latch "redisson_unlock_latch:{N}:<request id>"
-- KEYS[11] the successor's give-up marker "fairrw_attempt:{N}:<successor>"
--          (see ARGV[18])
-- ARGV[9]  unlock latch lifetime in milliseconds
-- ARGV[10] "1" to give the owner up: its marker M is set (so that no late
--          copy of its attempts takes anything) and its queue entries go
-- ARGV[11] the marker's lifetime in milliseconds
-- ARGV[12] how many write holds the owner still has alive
-- ARGV[13] how long the longest write of them has left, in ms
-- ARGV[14] how many read holds the owner still has alive
-- ARGV[15] how long the longest read of them has left, in ms
-- ARGV[16] "1" when the owner may hold reads in Redis (it was granted one,
--          or this releases or gives up a read); "0" spares looking
-- ARGV[17] the highest token passed: the highest fencing token the owner's
--          Client handed out under the owner's write, in a cohort ("0": none; see
--          RESERVE in common.lua): the release that ends the write closes
--          the range its grant reserved there (F falls to it, or to the
--          write's own token), so that a read returns the last write's
--          token and the next token follows it
-- ARGV[18] the successor: an owner of the same Client (its cohort's next
--          leader) queued as a writer with a lease of ARGV[5] before the
--          hold is released, as its own refused attempt would have queued
--          it ("": none), unless it was given up (its marker KEYS[11]
--          exists: a late copy of this release queues no one); a release
--          that frees the lock then grants it to the writer queued first,
--          the successor if no one queued before
--
-- Returns {result, grantee, token}: result -1 when the owner held no such
-- hold (or it had expired), 0 when the owner still holds in that mode, 1
-- when its last hold of that mode was released; grantee and token name the
-- writer this release granted the lock to ("" and 0: none). A retry with
-- the same request id returns the first call's result from the latch (and
-- no grantee: the grant's message told it); a release (not a give-up) that
-- arrives too late changes nothing and returns {-3, '', 0}: its sender
-- sends it again with a new stamp.
--
-- Invariant: the owner's hold and its deadlines are exactly its live holds
-- and the longest of them, so releasing one hold neither shortens another
-- live one nor leaves a dead one counted. When the lock becomes free, the
-- writer at the head of the queue is granted it here (see grant); when a
-- write ends under phase-fair, every reader waiting at that moment is
-- admitted ahead of the next writer. The write's token range closes with
-- it: F never falls below a token handed out. Nothing of an idle lock is
-- left.
local latched = answered(KEYS[10], M, ARGV[10], ARGV[11], ARGV[6], ARGV[7]) -- common.lua
if latched ~= nil then
  return {latched, '', 0}
end

load()
settle()
-- The successor queues first: if the lock is free after the release, or
-- already was (the hold had run out), whoever is next gets it.
local successor = (ARGV[18] or '') ~= '' and redis.call('exists', KEYS[11]) == 0
if successor then
  enqueue(ARGV[18], ARGV[5]) -- fair_lib.lua
end
local freed = successor
if ARGV[10] == '1' then
  if st.entry then
    dequeue(owner)
    freed = true
  end
  if pf then
    redis.call('zrem', W, owner)
    freed = redis.call('zrem', A, owner) == 1 or freed
  end
end

local writes, nreads = tonumber(ARGV[12]), tonumber(ARGV[14])
local writer = st.writer == owner
-- The owner's reads: none alive any more, or the longest one's deadline.
local reads = false
if nreads == 0 then
  if ARGV[16] == '1' then
    reads = redis.call('zrem', R, owner) == 1
    freed = freed or reads
  end
elseif read_deadline(owner) then
  reads = true
  local deadline = now + tonumber(ARGV[15])
  redis.call('zadd', R, deadline, owner)
  cover(R, deadline)
end
local result = -1
if ARGV[2] == 'w' and writer then
  result = writes > 0 and 0 or 1
elseif ARGV[2] == 'r' and reads then
  result = nreads > 0 and 0 or 1
end
if writer and writes == 0 and st.wtoken then
  -- The write ends: its token range closes at the highest token handed out
  -- of it (mint, common.lua). F holds the top of the range while no one
  -- minted since; a grant that follows mints from the closed value, else
  -- close_range writes it. Only a quorum holding this write raises F
  -- meanwhile (fence_raise.lua), and a raise may land on that very value
  -- (a write that reserved one token, RESERVE - 1 below the quorum's):
  -- the quorum's token comes as ARGV[17], so the range closes at it or
  -- above (fairrw/quorum_rwmutex.go, fence).
  local wtoken = tonumber(st.wtoken)
  if tonumber(redis.call('get', F)) == wtoken + RESERVE - 1 then
    st.fence = math.max(wtoken, tonumber(ARGV[17]) or 0)
  end
end

-- close_range writes the closed range's top to F, unless a grant minted
-- from it.
local function close_range()
  if st.fence then
    redis.call('set', F, string.format('%.0f', st.fence), 'px', keep(st.fence, now_us()))
    st.fence = nil
  end
end

if writer then
  if writes > 0 then
    local deadline = now + tonumber(ARGV[13])
    hset_until(deadline, lease, false, 'wcount', writes, 'wdeadline', deadline)
  elseif redis.call('exists', R, Q, W, A) == 0 then
    -- The last hold of an idle lock: nothing is left of it.
    if st.turned then
      redis.call(ARGV[8], C, 'r')
    end
    redis.call('del', S)
    close_range()
    redis.call('set', KEYS[10], result, 'px', ARGV[9])
    return {result, '', 0}
  else
    -- The grant that may follow overwrites these fields; deleting them
    -- first would cost a command for nothing, so next_holder deletes them
    -- only when it grants no one (see vacate).
    st.vacated, st.writer = true, false
    -- While the owner held the write no one else's read could begin and
    -- no reader was admitted (that happens just below): R holds no live
    -- entry but the owner's own reads, and A none.
    st.no_readers = nreads == 0
    st.no_admitted = true
    end_write() -- phase-fair: every reader waiting now enters before the next writer
    freed = true
  end
end
local grantee, token = nil, nil
if freed and not st.writer and not st.vacated and redis.call('exists', R, Q, W, A) == 0 then
  -- No one holds or waits: next_holder would only tell the readers turned
  -- away, and nothing of the lock is left.
  if st.turned then
    redis.call(ARGV[8], C, 'r')
  end
  redis.call('del', S)
else
  if freed then
    grantee, token = next_holder()
  end
  tidy()
end
close_range()
redis.call('set', KEYS[10], result, 'px', ARGV[9])
return {result, grantee or '', token or 0}
