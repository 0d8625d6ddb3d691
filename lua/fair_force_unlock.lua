-- Free a fair lock whatever its holders, in one mode only.
--
-- KEYS[1]..KEYS[9] and ARGV[1]..ARGV[8] as in fair_lib.lua (ARGV[2] is the
-- mode to free; ARGV[3] is unused).
--
-- Returns 1 when holders of that mode were removed, 0 otherwise; an error
-- reply "FAIRRW_POLICY ..." when the state records another policy or
-- protocol (nothing is changed).
--
-- Invariant: the other mode's holders and every waiter are kept; whoever
-- is next is let in exactly as after a release (fair_unlock.lua): under
-- phase-fair the readers waiting when a write ends enter first, then the
-- head writer is granted, or the readers turned away are told. The rules
-- applied are the ones the state records: a state recording another
-- policy or protocol than the caller's is refused, as an acquire refuses
-- it (mismatch in fair_lib.lua), since this script would apply the
-- caller's (a writer-preferring caller would not admit a phase-fair lock's
-- waiting readers ahead of its next writer).
load()
if st.policy and st.policy ~= policy then
  return redis.error_reply('FAIRRW_POLICY lock is held under policy ' .. st.policy)
end
settle()
local freed = 0
if ARGV[2] == 'w' then
  if st.writer then
    drop_writer() -- as a release of the write: phase-fair admits the waiting readers
    freed = 1
  end
elseif not st.writer and redis.call('zcard', R) > 0 then -- zcard: a foreign key at R fails here
  redis.call('del', R)
  freed = 1
end
if freed == 1 then
  next_holder()
  tidy()
end
return freed
