-- session_cancel: cancels a session and every live task of it, all or
-- nothing. The caller computed each task's cancellation from the revision it
-- read; if any task moved on, or a task was added, nothing is written and the
-- caller reads again.
-- KEYS[1] session hash   KEYS[2] session log   KEYS[3] session's task index
-- KEYS[4] idempotency    KEYS[5] wake stream
-- KEYS[6..] two per live task: task hash, task log
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] new session json   ARGV[4] now ms   ARGV[5] log min id
-- ARGV[6] session.cancelled event json   ARGV[7] session id
-- ARGV[8] response body   ARGV[9] size of the task index the caller read
-- ARGV[10..] per live task, in KEYS order: task id, expected revision,
--            new task json, wake snapshot, event json
-- Returns {'ok'} | {'replay', status, body} | {'idem_conflict'} | {'not_found'}
--       | {'already'} | {'conflict'}
local r = idem_replay(KEYS[4], ARGV[1])
if r then return r end
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'not_found'} end
if status ~= 'active' then return {'already'} end
if redis.call('ZCARD', KEYS[3]) ~= tonumber(ARGV[9]) then return {'conflict'} end
local ntasks = (#KEYS - 5) / 2
for i = 0, ntasks - 1 do
  local rev = redis.call('HGET', KEYS[6 + 2 * i], 'rev')
  if rev ~= ARGV[11 + 5 * i] then return {'conflict'} end
end

local logs = {KEYS[2]}
for i = 0, ntasks - 1 do logs[#logs + 1] = KEYS[7 + 2 * i] end
local ms, seq = next_id(ARGV[4], logs)
for i = 0, ntasks - 1 do
  local a = 10 + 5 * i
  local id = format_id(ms, seq)
  seq = seq + 1
  redis.call('HSET', KEYS[6 + 2 * i], 'rev', tonumber(ARGV[a + 1]) + 1, 'status', 'cancelled', 'json', ARGV[a + 2])
  redis.call('XADD', KEYS[2], 'MINID', '~', ARGV[5], id, 'e', ARGV[a + 4])
  redis.call('XADD', KEYS[7 + 2 * i], id, 'e', ARGV[a + 4])
  wake(KEYS[5], 't', ARGV[a], ARGV[7], tonumber(ARGV[a + 1]) + 1, ARGV[a + 3])
end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'json', ARGV[3])
redis.call('XADD', KEYS[2], 'MINID', '~', ARGV[5], format_id(ms, seq), 'e', ARGV[6])
wake(KEYS[5], 's', ARGV[7], ARGV[7], 0, '')
return idem_done(KEYS[4], ARGV[1], ARGV[2], 200, ARGV[8], {'ok'})
