-- Free a Redisson read-write lock whatever its holders, in one mode only.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_rwlock:{N}"
-- ARGV[1] the mode to free: "read" or "write"
-- ARGV[2] the message: "0" for read, "1" for write
-- ARGV[3] the publish command: "publish" or "spublish"
--
-- Returns 1 when the lock was in that mode and was deleted, 0 otherwise.
-- Lease keys of read holds are left to expire, as Java does.
--
-- Invariant: a lock in the other mode is never touched, so a read
-- force-unlock cannot free a writer's lock (nor the reverse).
-- A PUBLISH refused by the ACL would fail after the DEL: refuse first
-- (see publish_refused in common.lua, which this script does not include).
if redis.acl_check_cmd ~= nil and not redis.acl_check_cmd(ARGV[3], KEYS[2], '') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[3] .. ' to the channel ' .. KEYS[2])
end
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[3], KEYS[2], ARGV[2])
  return 1
end
return 0
