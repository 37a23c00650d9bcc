-- task_apply: writes one change the state machine decided, if the task is
-- still at the revision the change was computed from (compare-and-set). The
-- caller recomputes on 'conflict' with the current task this returns.
-- KEYS[1] task hash   KEYS[2] task log   KEYS[3] session log
-- KEYS[4] idempotency   KEYS[5] wake stream
-- ARGV[1] idempotency body hash ('' for none)   ARGV[2] idempotency ttl ms
-- ARGV[3] expected revision   ARGV[4] new status   ARGV[5] new task json
-- ARGV[6] now ms   ARGV[7] log min id   ARGV[8] task id   ARGV[9] session id
-- ARGV[10] wake snapshot ('' when large)   ARGV[11] response status
-- ARGV[12..] event json, one per event, in order
-- Returns {'ok', eventId...} | {'replay', status, body} | {'idem_conflict'}
--       | {'not_found'} | {'conflict', current task json}
local r = idem_replay(KEYS[4], ARGV[1])
if r then return r end
local cur = redis.call('HMGET', KEYS[1], 'rev', 'json')
if not cur[1] then return {'not_found'} end
if cur[1] ~= ARGV[3] then return {'conflict', cur[2]} end

local rev = tonumber(ARGV[3]) + 1
redis.call('HSET', KEYS[1], 'rev', rev, 'status', ARGV[4], 'json', ARGV[5])
local ms, seq = next_id(ARGV[6], {KEYS[3], KEYS[2]})
local out = {'ok'}
for i = 12, #ARGV do
  local id = format_id(ms, seq)
  redis.call('XADD', KEYS[3], 'MINID', '~', ARGV[7], id, 'e', ARGV[i])
  redis.call('XADD', KEYS[2], id, 'e', ARGV[i])
  out[#out + 1] = id
  seq = seq + 1
end
idem_store(KEYS[4], ARGV[1], ARGV[2], ARGV[11], ARGV[5])
wake(KEYS[5], 't', ARGV[8], ARGV[9], rev, ARGV[10])
return out
