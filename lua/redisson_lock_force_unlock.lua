-- Free a Redisson RLock whoever holds it.
--
-- KEYS[1] the lock hash N
-- KEYS[2] the channel "redisson_lock__channel:{N}"
-- KEYS[3] the fair policies' state "fairrw:<len>:{N}"
-- ARGV[1] the message "0"
-- ARGV[2] the publish command: "publish" or "spublish"
--
-- Returns 1 when the lock was held and was deleted, 0 when it was not
-- held, -1 when N is a read-write lock (a Redisson one: its hash has a
-- "mode" field; a fair policy's: its state exists), which is left alone:
-- Java's RLock would delete a Redisson one.
--
-- Invariant: only a mutex is ever freed here; a read-write lock of either
-- kind on the name is untouched.
-- A PUBLISH refused by the ACL would fail after the DEL: refuse first
-- (see publish_refused in common.lua, which this script does not include).
if redis.acl_check_cmd ~= nil and not redis.acl_check_cmd(ARGV[2], KEYS[2], '') then
  return redis.error_reply('NOPERM this user has no permissions to ' .. ARGV[2] .. ' to the channel ' .. KEYS[2])
end
if redis.call('hexists', KEYS[1], 'mode') == 1 or redis.call('exists', KEYS[3]) == 1 then
  return -1
end
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
