-- hook_close: closes an open hook: later callbacks get 410. Its events stay
-- readable until the hook's keys expire, and reads waiting on it are woken to
-- say it closed. Closing a closed hook changes nothing.
-- KEYS[1] hook hash   KEYS[2] idempotency   KEYS[3] wake stream
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin
-- ARGV[5] closed hook json (used only while the hook is open)
-- ARGV[6] hook id   ARGV[7] the hook's session id
-- Returns {'ok', hook json} | {'replay', body} | {'idem_conflict'} | {'not_found'}
local r = idem_replay(KEYS[2], ARGV[1])
if r then return r end
local h = redis.call('HMGET', KEYS[1], 'owner', 'status', 'json')
if not owned(h[1], ARGV[3], ARGV[4]) then return {'not_found'} end

-- Every check is done; writes start here.
local json = h[3]
if h[2] == HOOK_STATUS.open then
  json = ARGV[5]
  redis.call('HSET', KEYS[1], 'status', HOOK_STATUS.closed, 'json', json)
  wake(KEYS[3], WAKE_KIND.hook, ARGV[6], ARGV[7], 0, {})
end
return idem_done(KEYS[2], ARGV[1], ARGV[2], json, {'ok', json})
