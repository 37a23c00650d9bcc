-- task_apply: writes one change the state machine decided, if the task is
-- still at the revision the change was computed from (compare-and-set). The
-- caller recomputes on 'conflict' with the current task this returns.
-- KEYS[1] task record   KEYS[2] task log (a sorted set, for a task whose
--         hash does not keep its log: see the prelude)   KEYS[3] session log
-- KEYS[4] wake stream   KEYS[5] the session hash (for its notification
--         endpoints)   KEYS[6] the partition's outbox
-- KEYS[7..6+m] answer token keys, one per input request the change adds, then
--         sign-in attempt keys, one per sign-in the change starts (m may be 0)
-- Then, each only when the caller decided it is needed, in this order:
--   the idempotency key, for a caller's key (a command id the server made
--         is recorded in the task record);
--   when the change moves the task to another status: the session's live
--         tasks; the owner's tasks in the old status and in the new one; the
--         session's tasks in the old status and in the new one;
--   when it does and the task's executor is not its owner: the executor's
--         tasks in the old status and in the new one.
-- ARGV[1] idempotency body hash, or IDEM.task_record for a command id the
--         server made, recorded in the task record
-- ARGV[2] idempotency ttl ms, or that command id
-- ARGV[3] expected revision   ARGV[4] new status
-- ARGV[5] the new task json, whole or as edits of the current one (see
--         new_snapshot in the prelude)
-- ARGV[6] log min id
-- ARGV[7] the undo that takes the new task json back to the current one
-- ARGV[8] '1' when the change ends the task (the state machine decided:
--          its status becomes terminal), so it leaves the session's live tasks
-- ARGV[9] n, the number of events
-- ARGV[10..9+2n] two per event, in order: its json with the new task json
--         cut out, and where it was cut ('' for an event that carries none),
--         or its parts and EVENT_FORM.parts (see append_event)
-- ARGV[10+2n] the task's expire-at ms (the answer token keys end with it)
-- ARGV[11+2n..10+2n+m] the value of each answer token and attempt key, in KEYS order
-- The task's id and its session's are read from the keys of their hashes
-- (id_of).
-- Returns {'ok', eventId...} | {'replay', body} | {'idem_conflict'}
--       | {'not_found'} | {'conflict', current task json}
local n = tonumber(ARGV[9])
local task_id, session_id = id_of(KEYS[1]), id_of(KEYS[5])
local m = #ARGV - 10 - 2 * n
local recorded = ARGV[1] == IDEM.task_record
local idem_key, ix = KEYS[1], 7 + m
if not recorded then
  idem_key, ix = KEYS[ix], ix + 1
end
local r = idem_replay(idem_key, ARGV[1])
if r then return r end
local cur = rec_get(KEYS[1], 'rev', 'status', LEGACY_CREATED, RECORD_FIELD.endpoints, 'executor',
  RECORD_FIELD.commands, RECORD_FIELD.log, 'json', RECORD_FIELD.undos)
if not cur[1] then return {'not_found'} end
if recorded then
  r = command_replay(cur[6], ARGV[2])
  if r then return r end
end
if cur[1] ~= ARGV[3] then return {'conflict', cur[8]} end
-- Edits made for other bytes than the record holds (which the revision
-- matching rules out) are answered as a conflict: the caller computes the
-- change again from what is there.
local json = new_snapshot(ARGV[5], cur[8])
if not json then return {'conflict', cur[8]} end
local expire_at = ARGV[10 + 2 * n]
local rev = tonumber(ARGV[3]) + 1
local out = {'ok'}
local eps = endpoints_of({{OUTBOX_SCOPE.task, cur[4]},
  {OUTBOX_SCOPE.session, redis.call('HGET', KEYS[5], RECORD_FIELD.endpoints)}})
local stream, id
local types, added = {}, {}
for i = 10, 9 + 2 * n, 2 do
  local ev, cut = ARGV[i], ARGV[i + 1]
  local function whole() return whole_event(ev, cut, json, session_id) end
  id = append_event(KEYS[3], ARGV[6], id, ev, cut)
  if cur[7] then
    added[#added + 1] = id
  else
    stream = task_log_append(KEYS[2], id, whole, stream)
  end
  if #eps > 0 then route(KEYS[6], eps, session_id, task_id, id, whole()) end
  out[#out + 1] = id
  types[#types + 1] = ev
end
for k = 7, 6 + m do
  redis.call('SET', KEYS[k], ARGV[10 + 2 * n + k - 6], 'PXAT', expire_at)
end
-- The status indexes the caller gave are the ones the task moves between.
if KEYS[ix] then
  if ARGV[8] == '1' then redis.call('ZREM', KEYS[ix], task_id) end
  local created = move_status(task_id, expire_at, KEYS[ix + 1], KEYS[ix + 2], KEYS[ix + 3], KEYS[ix + 4])
  if KEYS[ix + 5] then move_executor_status(task_id, cur[5], created, expire_at, KEYS[ix + 5], KEYS[ix + 6]) end
end
local fields = {'rev', rev, 'status', ARGV[4], 'json', json}
drop_legacy(fields, cur[3])
undo_keep(fields, cur[9], ARGV[3], ARGV[7])
if recorded then
  fields[#fields + 1] = RECORD_FIELD.commands
  fields[#fields + 1] = commands_with(cur[6], ARGV[2], out)
end
if cur[7] and #added > 0 then task_log_keep(fields, cur[7], added, KEYS[2], KEYS[1], expire_at) end
rec_set(KEYS[1], fields)
wake(KEYS[4], WAKE_KIND.task, task_id, session_id, rev, types)
return idem_done(idem_key, ARGV[1], ARGV[2], json, out)
