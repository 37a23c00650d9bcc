-- hook_ingest: stores one callback request in the hook's queue, if the hook
-- still takes requests. Signatures were checked by the caller; this decides
-- the rest in one step: state, rate limit, dedupe, append, session event.
-- KEYS[1] hook hash   KEYS[2] task hash (any key of the slot for a session hook: not read)
-- KEYS[3] session hash   KEYS[4] hook queue   KEYS[5] hook dedupe hash
-- KEYS[6] session log   KEYS[7] wake stream   KEYS[8] command record
-- KEYS[9] the partition's outbox (hook.received goes to endpoints that ask for it)
-- ARGV[1] now ms   ARGV[2] '1' when the hook belongs to a task
-- ARGV[3] provider event id ('' for none)
-- ARGV[4] rate limit emission interval ms ('0': no limit)   ARGV[5] burst
-- ARGV[6] received-at (RFC 3339)   ARGV[7] method   ARGV[8] content type
-- ARGV[9] allowed headers (json object)   ARGV[10] body field: HOOK_FIELD.body (UTF-8) or .body_base64
-- ARGV[11] body   ARGV[12] session log min id   ARGV[13] hook id   ARGV[14] session id
-- ARGV[15..17] the session log's hook.received event, rendered by the
--          caller in three parts: it is ARGV[15] .. event id .. ARGV[16] .. seq .. ARGV[17]
-- ARGV[18] command hash ('cmd')   ARGV[19] command record ttl ms
-- ARGV[20] the task id of a task's hook ('' for a session's)
-- Returns {'ok', eventId} | {'duplicate', first eventId} | {'not_found'}
--       | {'closed', reason} (reason: closed, expired, task_terminal, session_cancelled)
--       | {'rate_limited', retry after ms}
local r = idem_replay(KEYS[8], ARGV[18])
if r then return r end
local now = tonumber(ARGV[1])
local h = redis.call('HMGET', KEYS[1], 'status', 'exp', 'tat', 'kexp')
if not h[1] then return {'not_found'} end
local task = nil
if ARGV[2] == '1' then task = KEYS[2] end
local reason = hook_closed_reason(h[1], h[2], now, task, KEYS[3])
if reason then return {'closed', reason} end

-- Rate limit (GCRA): tat is the theoretical arrival time of the next request;
-- a request may come up to burst intervals early.
local interval = tonumber(ARGV[4])
local tat = nil
if interval > 0 then
  tat = tonumber(h[3]) or now
  if tat < now then tat = now end
  tat = tat + interval
  local allow_at = tat - interval * tonumber(ARGV[5])
  if now < allow_at then return {'rate_limited', string.format('%d', allow_at - now)} end
end

local first = nil
if ARGV[3] ~= '' then first = redis.call('HGET', KEYS[5], ARGV[3]) end

-- Every check is done; writes start here.
if tat then redis.call('HSET', KEYS[1], 'tat', string.format('%d', tat)) end
if first then return {'duplicate', first} end

local kexp = h[4]
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local fields = {HOOK_FIELD.seq, seq, HOOK_FIELD.at, ARGV[6], HOOK_FIELD.method, ARGV[7],
  HOOK_FIELD.content_type, ARGV[8], HOOK_FIELD.headers, ARGV[9], ARGV[10], ARGV[11]}
if ARGV[3] ~= '' then
  fields[#fields + 1] = HOOK_FIELD.provider_event_id
  fields[#fields + 1] = ARGV[3]
end
local id = redis.call('XADD', KEYS[4], '*', unpack(fields))
redis.call('PEXPIREAT', KEYS[4], kexp)
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[3], id)
  redis.call('PEXPIREAT', KEYS[5], kexp)
end

local ms, sq = next_id(ARGV[1], {KEYS[6]})
local ev = ARGV[15] .. id .. ARGV[16] .. seq .. ARGV[17]
local eid = format_id(ms, sq)
redis.call('XADD', KEYS[6], 'MINID', '~', ARGV[12], eid, 'e', ev)
local lists = {{OUTBOX_SCOPE.session, redis.call('HGET', KEYS[3], 'nfy')}}
if task then lists[2] = {OUTBOX_SCOPE.task, redis.call('HGET', task, 'nfy')} end
route(KEYS[9], endpoints_of(lists), ARGV[14], ARGV[20], eid, ev)
wake(KEYS[7], WAKE_KIND.hook, ARGV[13], ARGV[14], 0, '', {ev})
return idem_done(KEYS[8], ARGV[18], ARGV[19], '', {'ok', id})
