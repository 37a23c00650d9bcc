-- task_create: the receipt. A new working task at revision 1 in an active
-- session of the caller, its task.created event in both logs, the indexes.
-- KEYS[1] session hash   KEYS[2] task hash   KEYS[3] task log   KEYS[4] session log
-- KEYS[5] owner's task index   KEYS[6] session's task index
-- KEYS[7] idempotency   KEYS[8] wake stream
-- KEYS[9] the principal's session index (kept as long as the session when the
--         principal owns it)
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin
-- ARGV[5] task id   ARGV[6] task json   ARGV[7] now ms   ARGV[8] expire-at ms
-- ARGV[9] event json   ARGV[10] log min id   ARGV[11] wake snapshot ('' when large)
-- ARGV[12] session id
-- Returns {'ok', eventId} | {'replay', status, body} | {'idem_conflict'}
--       | {'session_not_found'} | {'session_not_active'} | {'exists'}
local r = idem_replay(KEYS[7], ARGV[1])
if r then return r end
local s = redis.call('HMGET', KEYS[1], 'owner', 'status')
if not s[1] or (s[1] ~= ARGV[3] and ARGV[4] ~= '1') then return {'session_not_found'} end
if s[2] ~= 'active' then return {'session_not_active'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'exists'} end

redis.call('HSET', KEYS[2], 'rev', 1, 'status', 'working', 'json', ARGV[6])
local ms, seq = next_id(ARGV[7], {KEYS[4], KEYS[3]})
local id = format_id(ms, seq)
redis.call('XADD', KEYS[4], 'MINID', '~', ARGV[10], id, 'e', ARGV[9])
redis.call('XADD', KEYS[3], id, 'e', ARGV[9])
redis.call('ZADD', KEYS[5], ARGV[7], ARGV[5])
redis.call('ZADD', KEYS[6], ARGV[7], ARGV[5])
redis.call('PEXPIREAT', KEYS[2], ARGV[8])
redis.call('PEXPIREAT', KEYS[3], ARGV[8])
extend_to(ARGV[8], {KEYS[1], KEYS[4], KEYS[5], KEYS[6]})
if s[1] == ARGV[3] then extend_to(ARGV[8], {KEYS[9]}) end
wake(KEYS[8], 't', ARGV[5], ARGV[12], 1, ARGV[11])
return idem_done(KEYS[7], ARGV[1], ARGV[2], 201, ARGV[6], {'ok', id})
