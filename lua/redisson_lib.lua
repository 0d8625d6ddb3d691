-- Shared openings of the Redisson-format acquire and release scripts (the
-- read-write lock's and the RLock's). Each of those scripts is common.lua,
-- this file, then its own (see lua.Compose).
--
-- KEYS[1] and ARGV[1] are the including script's (KEYS[1] is always the
-- lock hash N): this file reads neither; each script passes its own keys and
-- values to these functions.
--
-- refused(marker, fair, readers, stamp, window), an acquire's opening, takes
-- the owner's give-up marker "fairrw_attempt:{N}:<owner>", the fair
-- policies' state key and readers key, and the attempt's stamp and window
-- (see common.lua). The readers key is checked too because it can outlive
-- the state: the state covers the first reader's lease, a later reader's
-- may be longer.
-- Returns nil when the script may go on; {-1, 0} when the attempt is stale
-- or its owner was given up (it takes nothing); an error reply
-- "FAIRRW_POLICY ..." when a fair policy holds the name. Usually no such key
-- exists: one EXISTS tells, and only otherwise are they read one by one.
--
-- foreign(marker, fair) is refused()'s answer once one of those keys is
-- known to exist: {-1, 0} when it is the marker, else the error reply. The
-- write acquire probes them in one EXISTS with the lock hash itself (so
-- that a free name costs it no read of the hash) and calls it when more
-- than the hash exists.
--
-- The releases' opening, answered(), is in common.lua: the fair policies'
-- release shares it.
--
-- Invariant: an attempt of an owner that was given up, or that arrives too
-- late, takes nothing.
local function foreign(marker, fair)
  if redis.call('exists', marker) == 1 then
    return {-1, 0}
  end
  return redis.error_reply('FAIRRW_POLICY lock is held under policy ' .. (redis.call('hget', fair, 'policy') or 'fair'))
end

local function refused(marker, fair, readers, stamp, window)
  if stale(stamp, window) then
    return {-1, 0}
  end
  if redis.call('exists', marker, fair, readers) == 0 then
    return nil
  end
  return foreign(marker, fair)
end
