-- hook_status: a hook as its owner reads it, with whether it takes posts
-- decided as hook_ingest decides it (hook_closed_reason), so no read decides
-- it again. A caller that does not know the hook's task and session yet
-- sends only the hook: when the hook's own fields decide (closed, expired),
-- that is the answer; otherwise the answer is 'parents', and the caller asks
-- again with them. It only reads.
-- KEYS[1] hook hash   KEYS[2] task record   KEYS[3] session hash
--         (KEYS[2] for a hook of the session only, and KEYS[2] and KEYS[3]
--         without the parents: any key of the slot, not read)
-- ARGV[1] principal   ARGV[2] '1' when the principal is an admin   ARGV[3] now ms
-- ARGV[4] 'task' (a task's hook, its parents given), 'session' (a session's
--         hook, its session given) or '' (the parents not given)
-- Returns {'ok', hook json, HOOK_STATUS.open or .closed, close reason ('' when open, else one of CLOSED)}
--       | {'parents', hook json} | {'not_found'}
local h = redis.call('HMGET', KEYS[1], 'owner', 'json', 'status', 'exp')
if not owned(h[1], ARGV[1], ARGV[2]) then return {'not_found'} end
local now = tonumber(ARGV[3])
if ARGV[4] == '' then
  local own = hook_own_closed_reason(h[3], h[4], now)
  if own then return {'ok', h[2], HOOK_STATUS.closed, own} end
  return {'parents', h[2]}
end
local task = nil
if ARGV[4] == 'task' then task = KEYS[2] end
local reason = hook_closed_reason(h[3], h[4], now, task, KEYS[3])
if reason then return {'ok', h[2], HOOK_STATUS.closed, reason} end
return {'ok', h[2], HOOK_STATUS.open, ''}
