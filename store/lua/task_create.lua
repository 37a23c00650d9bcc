-- task_create: the receipt. A new working task at revision 1 in an active
-- session of the caller, its task.created event in both logs, the indexes.
-- KEYS[1] session hash   KEYS[2] task record (which keeps the task's log: see
--         the prelude)   KEYS[3] session log
-- KEYS[4] owner's task index   KEYS[5] wake stream
-- KEYS[6] the principal's session index (kept as long as the session when the
--         principal owns it)
-- KEYS[7] session's live tasks   KEYS[8] owner's working tasks
-- KEYS[9] session's working tasks   KEYS[10] the partition's outbox
-- Then, each only when it is written, in this order: the idempotency key,
-- for a caller's key (a command id the server made is recorded in the task
-- hash); the owner's tasks of this kind, for a task of a kind; the
-- executor's task index and its working tasks, when the executor is not the
-- owner.
-- ARGV[1] idempotency body hash, or IDEM.task_record for a command id the
--         server made, recorded in the task record
-- ARGV[2] idempotency ttl ms, or that command id
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin
-- ARGV[5] task json   ARGV[6] now ms   ARGV[7] expire-at ms
-- ARGV[8] the task.created event's json with the task json cut out   ARGV[9] log min id
-- ARGV[10] where the event was cut, or EVENT_FORM.parts when ARGV[8] is the
--          event's parts (see append_event)
-- ARGV[11] most live tasks a session may hold ('0': no limit)
-- ARGV[12] requester   ARGV[13] kind ('' for none)
-- ARGV[14] executor (the principal when it is the owner)
-- ARGV[15] the response to keep for a repeat ('' for the task json: it
--          differs when the response shows new endpoints' secrets)
-- ARGV[16] the task's notification endpoint list ('' for none)
-- ARGV[17..] endpoint id, secret, for each endpoint of that list
-- The task's id and its session's are read from the keys of their hashes
-- (id_of).
-- Returns {'ok', eventId} | {'replay', body} | {'idem_conflict'}
--       | {'session_not_found'} | {'session_not_active'} | {'exists'}
--       | {'too_many_tasks', live}
local recorded = ARGV[1] == IDEM.task_record
local task_id, session_id = id_of(KEYS[2]), id_of(KEYS[1])
local idem_key, ix = KEYS[2], 11
if not recorded then
  idem_key, ix = KEYS[ix], ix + 1
end
local kind_key, executor_keys = nil, ix
if ARGV[13] ~= '' then
  kind_key, executor_keys = KEYS[ix], ix + 1
end
local r = idem_replay(idem_key, ARGV[1])
if r then return r end
local t = rec_get(KEYS[2], 'rev', RECORD_FIELD.commands)
if t[1] and recorded then
  r = command_replay(t[2], ARGV[2])
  if r then return r end
end
local s = redis.call('HMGET', KEYS[1], 'owner', 'status', RECORD_FIELD.endpoints, SESSION_FIELD.kept)
if not owned(s[1], ARGV[3], ARGV[4]) then return {'session_not_found'} end
if s[2] ~= SESSION_STATUS.active then return {'session_not_active'} end
if t[1] then return {'exists'} end
local max_live = tonumber(ARGV[11])
if max_live > 0 then
  local live = redis.call('ZCOUNT', KEYS[7], '(' .. ARGV[6], '+inf')
  if live >= max_live then return {'too_many_tasks', live} end
end

local id = append_event(KEYS[3], ARGV[9], nil, ARGV[8], ARGV[10])
local fields = {'rev', 1, 'status', TASK_STATUS.working, 'owner', ARGV[3]}
-- The requester, executor and kind fields are written only when they say
-- something: a task without a requester or executor field is requested and
-- executed by its owner, as most are, and one without a kind has none.
-- Each field of the record costs memory for as long as the task is kept.
if ARGV[12] ~= ARGV[3] then
  fields[#fields + 1] = 'requester'
  fields[#fields + 1] = ARGV[12]
end
if ARGV[14] ~= ARGV[3] then
  fields[#fields + 1] = 'executor'
  fields[#fields + 1] = ARGV[14]
end
if ARGV[13] ~= '' then
  fields[#fields + 1] = 'kind'
  fields[#fields + 1] = ARGV[13]
end
fields[#fields + 1] = 'json'
fields[#fields + 1] = ARGV[5]
fields[#fields + 1] = RECORD_FIELD.log
fields[#fields + 1] = log_member(id)
if recorded then
  fields[#fields + 1] = RECORD_FIELD.commands
  fields[#fields + 1] = commands_with(nil, ARGV[2], {'ok', id})
end
rec_create(KEYS[2], endpoint_fields(fields, ARGV[16], {unpack(ARGV, 17)}), ARGV[7])
local eps = endpoints_of({{OUTBOX_SCOPE.task, ARGV[16]}, {OUTBOX_SCOPE.session, s[3]}})
if #eps > 0 then route(KEYS[10], eps, session_id, task_id, id, whole_event(ARGV[8], ARGV[10], ARGV[5], session_id)) end
-- The live tasks that expired without an end are taken out of the live
-- index on one create in 16 (by the new id's last character, which is
-- random): reads and counts pass over them anyway (their score, the expiry,
-- is past), so this only bounds what they hold.
if string.byte(task_id, -1) % 16 == 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[7], 0, ARGV[6])
end
index_add(KEYS[7], ARGV[7], task_id, ARGV[7])
index_add(KEYS[8], ARGV[6], task_id, ARGV[7])
index_add(KEYS[9], ARGV[6], task_id, ARGV[7])
-- The keys no script empties live at least as long as the task: the
-- session and its log, and, when the caller owns the session, the caller's
-- index of tasks and of sessions. (A session's tasks are listed from its
-- indexes by status: it has no index of all of them.) The session hash
-- keeps (SESSION_FIELD.kept) the time they are all kept until; a task that
-- outlives it extends them KEPT_SLACK_MS past its own end, so that the tasks
-- created in that time extend none of them. The owner's index of tasks in
-- a session of another's is an index as index_add keeps them.
local lasting = {KEYS[1], KEYS[3]}
if s[1] == ARGV[3] then
  redis.call('ZADD', KEYS[4], ARGV[6], task_id)
  lasting[#lasting + 1] = KEYS[4]
  lasting[#lasting + 1] = KEYS[6]
else
  index_add(KEYS[4], ARGV[6], task_id, ARGV[7])
end
if not s[4] or tonumber(s[4]) < tonumber(ARGV[7]) then
  local kept = tonumber(ARGV[7]) + KEPT_SLACK_MS
  extend_to(kept, lasting)
  redis.call('HSET', KEYS[1], SESSION_FIELD.kept, kept)
end
if kind_key then index_add(kind_key, ARGV[6], task_id, ARGV[7]) end
if ARGV[14] ~= ARGV[3] then
  index_add(KEYS[executor_keys], ARGV[6], task_id, ARGV[7])
  index_add(KEYS[executor_keys + 1], ARGV[6], task_id, ARGV[7])
end
wake(KEYS[5], WAKE_KIND.task, task_id, session_id, 1, {ARGV[8]})
local body = ARGV[15]
if body == '' then body = ARGV[5] end
return idem_done(idem_key, ARGV[1], ARGV[2], body, {'ok', id})
