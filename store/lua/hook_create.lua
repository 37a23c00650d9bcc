-- hook_create: a new open hook of a session (and maybe of one of its tasks),
-- the mapping from its token's SHA-256 to its id, and the indexes.
-- KEYS[1] hook hash   KEYS[2] token key   KEYS[3] session hash
-- KEYS[4] task record (any key of the slot for a session hook: not read); a
--         task hook is made by the task's executor (or an admin)
-- KEYS[5] session's hook index   KEYS[6] task's hook index (unused for a session hook)
-- KEYS[7] owner's hook index   KEYS[8] idempotency   KEYS[9] session log
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin
-- ARGV[5] hook id   ARGV[6] task id ('' for a session hook)   ARGV[7] hook json
-- ARGV[8] ingest config json (holds the verify secret; never returned)
-- ARGV[9] now ms   ARGV[10] stops accepting at (ms)   ARGV[11] keys expire at (ms)
-- ARGV[12] replay body (the create response without the token)
-- ARGV[13] visibility ceiling ms: the longest visibility a read may ask for,
--          kept with the hook so hook_read keeps each delivery's visibility
--          (0: none kept, and reads go by the visibility of the read)
-- Returns {'ok'} | {'replay', body} | {'idem_conflict'}
--       | {'session_not_found'} | {'session_not_active'}
--       | {'task_not_found'} | {'task_terminal'} | {'exists'}
local r = idem_replay(KEYS[8], ARGV[1])
if r then return r end
-- A session hook is its session owner's; a task hook its task executor's
-- (the executor field, or the owner when there is none), whoever owns the
-- task's session.
local s = redis.call('HMGET', KEYS[3], 'owner', 'status')
if ARGV[6] == '' and not owned(s[1], ARGV[3], ARGV[4]) then return {'session_not_found'} end
if not s[1] then return {'session_not_found'} end
if ARGV[6] ~= '' then
  local t = rec_front(KEYS[4], 'status', 'owner', 'executor')
  if not owned(t[3] or t[2], ARGV[3], ARGV[4]) then return {'task_not_found'} end
  if s[2] ~= SESSION_STATUS.active then return {'session_not_active'} end
  if terminal[t[1]] then return {'task_terminal'} end
end
if s[2] ~= SESSION_STATUS.active then return {'session_not_active'} end
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return {'exists'} end

local fields = {'json', ARGV[7], 'owner', ARGV[3], 'status', HOOK_STATUS.open,
  'exp', ARGV[10], 'kexp', ARGV[11], HOOK_HASH.config, ARGV[8], 'seq', 0}
if tonumber(ARGV[13]) > 0 then
  fields[#fields + 1] = HOOK_HASH.ceiling
  fields[#fields + 1] = ARGV[13]
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIREAT', KEYS[1], ARGV[11])
redis.call('SET', KEYS[2], ARGV[5], 'PXAT', ARGV[11])
redis.call('ZADD', KEYS[5], ARGV[9], ARGV[5])
redis.call('ZADD', KEYS[7], ARGV[9], ARGV[5])
local extend = {KEYS[3], KEYS[9], KEYS[5], KEYS[7]}
if ARGV[6] ~= '' then
  redis.call('ZADD', KEYS[6], ARGV[9], ARGV[5])
  extend[#extend + 1] = KEYS[6]
end
extend_to(ARGV[11], extend)
return idem_done(KEYS[8], ARGV[1], ARGV[2], ARGV[12], {'ok'})
