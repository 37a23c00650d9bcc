-- session_cancel_tasks: cancels one batch of a cancelling session's live
-- tasks. Each task's cancellation was computed from the revision the caller
-- read; a task that moved on since is left out (the caller reads it again),
-- the others are written as task_apply would write a cancel.
-- KEYS[1] session hash   KEYS[2] session log   KEYS[3] session's live tasks
-- KEYS[4] session's cancelled list   KEYS[5] partition's cancels
-- KEYS[6] wake stream   KEYS[7] command record   KEYS[8] partition's outbox
-- KEYS[9..] eight per task: task record, task log, owner's tasks in the old status,
--           owner's cancelled tasks, session's tasks in the old status,
--           session's cancelled tasks, executor's tasks in the old status,
--           executor's cancelled tasks (the last two moved only when the
--           task's executor is not its owner)
-- ARGV[1] command hash ('cmd')   ARGV[2] command record ttl ms   ARGV[3] log min id
-- ARGV[4] session id   ARGV[5] lease end ms
-- ARGV[6..] six per task, in KEYS order: task id, expected revision,
--           cancelled task json, the task.terminal event's json with the
--           cancelled task json cut out, where it was cut (or its parts and
--           EVENT_FORM.parts: see append_event), and the undo that takes the
--           cancelled task json back to the current one
-- Returns {'ok', cancelled task id...} | {'not_cancelling'}
local r = idem_replay(KEYS[7], ARGV[1])
if r then return r end
if redis.call('HGET', KEYS[1], 'cancelling') ~= '1' then return {'not_cancelling'} end
local ntasks = (#KEYS - 8) / 8
local take = {}
for i = 0, ntasks - 1 do
  local t = rec_get(KEYS[9 + 8 * i], 'rev', LEGACY_CREATED, RECORD_FIELD.endpoints, 'executor',
    RECORD_FIELD.log, RECORD_FIELD.undos)
  if t[1] == ARGV[7 + 6 * i] then
    take[#take + 1] = {i, t[2], t[3], t[4], t[5], t[6]}
  end
end

local out = {'ok'}
local ses_endpoints = redis.call('HGET', KEYS[1], RECORD_FIELD.endpoints)
local id
for _, pick in ipairs(take) do
  local i, legacy = pick[1], pick[2]
  local k, a = 9 + 8 * i, 6 + 6 * i
  local rev = tonumber(ARGV[a + 1]) + 1
  local ev, cut = ARGV[a + 3], ARGV[a + 4]
  local function whole() return whole_event(ev, cut, ARGV[a + 2], ARGV[4]) end
  id = append_event(KEYS[2], ARGV[3], id, ev, cut)
  local fields = {'rev', rev, 'status', TASK_STATUS.cancelled, 'json', ARGV[a + 2]}
  undo_keep(fields, pick[6], ARGV[a + 1], ARGV[a + 5])
  if pick[5] then
    task_log_keep(fields, pick[5], {id}, KEYS[k + 1], KEYS[k], 0)
  else
    task_log_append(KEYS[k + 1], id, whole)
  end
  drop_legacy(fields, legacy)
  rec_set(KEYS[k], fields)
  local eps = endpoints_of({{OUTBOX_SCOPE.task, pick[3]}, {OUTBOX_SCOPE.session, ses_endpoints}})
  if #eps > 0 then route(KEYS[8], eps, ARGV[4], ARGV[a], id, whole()) end
  redis.call('ZREM', KEYS[3], ARGV[a])
  local expire_at = redis.call('PEXPIRETIME', KEYS[k])
  local created = move_status(ARGV[a], expire_at, KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5])
  move_executor_status(ARGV[a], pick[4], created, expire_at, KEYS[k + 6], KEYS[k + 7])
  redis.call('RPUSH', KEYS[4], ARGV[a])
  wake(KEYS[6], WAKE_KIND.task, ARGV[a], ARGV[4], rev, {ev})
  out[#out + 1] = ARGV[a]
end
redis.call('PEXPIRE', KEYS[4], 86400000)
redis.call('ZADD', KEYS[5], ARGV[5], ARGV[4])
return idem_done(KEYS[7], ARGV[1], ARGV[2], '', out)
