-- session_cancel: begins a session's cancel. The session stops taking tasks
-- and its hooks close at once (both ask for an active session); its live
-- tasks are then cancelled in bounded batches (session_cancel_tasks) and the
-- cancel ends with session_cancel_done. The partition's cancels set holds the
-- session until then, scored by the lease of the replica working on it, so
-- another replica finishes a cancel whose replica died.
-- KEYS[1] session hash   KEYS[2] command record   KEYS[3] partition's cancels
-- KEYS[4] wake stream
-- ARGV[1] command hash ('cmd')   ARGV[2] command record ttl ms
-- ARGV[3] cancelled session json   ARGV[4] reason   ARGV[5] lease end ms
-- ARGV[6] session id
-- Returns {'ok'} | {'not_found'} | {'already'} (cancelled, or being cancelled)
local r = idem_replay(KEYS[2], ARGV[1])
if r then return r end
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'not_found'} end
if status ~= SESSION_STATUS.active then return {'already'} end

redis.call('HSET', KEYS[1], 'status', SESSION_STATUS.cancelled, 'json', ARGV[3], 'reason', ARGV[4], 'cancelling', '1')
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[6])
redis.call('PEXPIRE', KEYS[3], 86400000)
wake(KEYS[4], WAKE_KIND.session, ARGV[6], ARGV[6], 0, {})
return idem_done(KEYS[2], ARGV[1], ARGV[2], '', {'ok'})
