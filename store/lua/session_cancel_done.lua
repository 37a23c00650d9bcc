-- session_cancel_done: ends a session's cancel once no live task is left:
-- appends session.cancelled with every task the cancel ended, keeps the
-- answer for an idempotent repeat, and takes the session off the cancels.
-- KEYS[1] session hash   KEYS[2] session log   KEYS[3] session's live tasks
-- KEYS[4] session's cancelled list   KEYS[5] partition's cancels
-- KEYS[6] idempotency (or command record)   KEYS[7] wake stream
-- KEYS[8] partition's outbox
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made
-- ARGV[2] idempotency ttl ms   ARGV[3] now ms   ARGV[4] log min id
-- ARGV[5] session id   ARGV[6] session.cancelled event json
-- ARGV[7] the answer to keep   ARGV[8] length of the cancelled list the
--         caller read
-- Returns {'ok'} | {'replay', body} | {'idem_conflict'}
--       | {'not_cancelling'} | {'tasks_left'}
local r = idem_replay(KEYS[6], ARGV[1])
if r then return r end
if redis.call('HGET', KEYS[1], 'cancelling') ~= '1' then return {'not_cancelling'} end
if redis.call('ZCOUNT', KEYS[3], '(' .. ARGV[3], '+inf') > 0 then return {'tasks_left'} end
if redis.call('LLEN', KEYS[4]) ~= tonumber(ARGV[8]) then return {'tasks_left'} end

local id = add_entry(KEYS[2], ARGV[4], nil, 'e', ARGV[6])
route(KEYS[8], endpoints_of({{OUTBOX_SCOPE.session, redis.call('HGET', KEYS[1], RECORD_FIELD.endpoints)}}), ARGV[5], '', id, ARGV[6])
redis.call('HDEL', KEYS[1], 'cancelling', 'reason')
redis.call('DEL', KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[5])
wake(KEYS[7], WAKE_KIND.session, ARGV[5], ARGV[5], 0, {ARGV[6]})
return idem_done(KEYS[6], ARGV[1], ARGV[2], ARGV[7], {'ok'})
