-- hook_ingest: stores one callback request in the hook's queue, if the hook
-- still takes requests. Signatures were checked by the caller; this decides
-- the rest in one step: state, rate limit, dedupe, append, session event.
-- KEYS[1] hook hash   KEYS[2] task record (any key of the slot for a session hook: not read)
-- KEYS[3] session hash   KEYS[4] hook queue   KEYS[5] hook dedupe hash
-- KEYS[6] session log   KEYS[7] wake stream   KEYS[8] command record
-- KEYS[9] the partition's outbox (hook.received goes to endpoints that ask for it)
-- ARGV[1] now ms   ARGV[2] provider event id ('' for none)
-- ARGV[3] rate limit emission interval ms ('0': no limit)   ARGV[4] burst
-- ARGV[5] session log min id   ARGV[6] '1' for a task's hook, '0' for a session's
-- ARGV[7] command hash ('cmd')   ARGV[8] command record ttl ms
-- ARGV[9] the session log's hook.received event, rendered whole by the
--         caller but for two values only this script knows: the request's
--         id in the hook's queue goes where FILL.queue_id stands, its seq
--         where FILL.seq stands
-- ARGV[10] the hook's config as the caller read it, when its secret is to
--          be sealed again ('' for none)   ARGV[11] the config sealed again
-- ARGV[12..] the queue entry's fields after its seq (name, value ...)
-- The hook's id, its session's and its task's are read from the keys of
-- their hashes (id_of).
-- Returns {'ok', eventId} | {'duplicate', first eventId} | {'not_found'}
--       | {'closed', reason} (reason: one of CLOSED)
--       | {'rate_limited', retry after ms}
local r = idem_replay(KEYS[8], ARGV[7])
if r then return r end
local now = tonumber(ARGV[1])
local h = redis.call('HMGET', KEYS[1], 'status', 'exp', 'tat', 'kexp', 'seq')
if not h[1] then return {'not_found'} end
local task, task_id = nil, ''
if ARGV[6] == '1' then task, task_id = KEYS[2], id_of(KEYS[2]) end
local reason, task_eps, ses_eps = hook_closed_reason(h[1], h[2], now, task, KEYS[3], RECORD_FIELD.endpoints)
if reason then return {'closed', reason} end

-- Rate limit (GCRA): tat is the theoretical arrival time of the next request;
-- a request may come up to burst intervals early.
local interval = tonumber(ARGV[3])
local tat = nil
if interval > 0 then
  tat = tonumber(h[3]) or now
  if tat < now then tat = now end
  tat = tat + interval
  local allow_at = tat - interval * tonumber(ARGV[4])
  if now < allow_at then return {'rate_limited', string.format('%d', allow_at - now)} end
end

local first = nil
if ARGV[2] ~= '' then first = redis.call('HGET', KEYS[5], ARGV[2]) end

-- Every check is done; writes start here.
if ARGV[10] ~= '' then reseal(KEYS[1], HOOK_HASH.config, ARGV[10], ARGV[11]) end
local seq = (tonumber(h[5]) or 0) + 1
local hook = {}
if tat then hook = {'tat', string.format('%d', tat)} end
if first then
  if tat then redis.call('HSET', KEYS[1], unpack(hook)) end
  return {'duplicate', first}
end
hook[#hook + 1] = 'seq'
hook[#hook + 1] = seq
redis.call('HSET', KEYS[1], unpack(hook))

-- The queue lives until the hook's kexp, which never changes: it gets that
-- expiry when it is made, by the first post (seq 1) or by the first group
-- read (MKSTREAM), and nothing takes the key away before then.
local id = redis.call('XADD', KEYS[4], '*', HOOK_FIELD.seq, seq, unpack(ARGV, 12))
if seq == 1 then redis.call('PEXPIREAT', KEYS[4], h[4]) end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[2], id)
  redis.call('PEXPIREAT', KEYS[5], h[4])
end

-- fill writes value where the event holds marker: a byte no JSON text
-- holds, so that place is the only one.
local function fill(ev, marker, value)
  local at = string.find(ev, marker, 1, true)
  if not at then return ev end
  return string.sub(ev, 1, at - 1) .. value .. string.sub(ev, at + #marker)
end

local session_id = id_of(KEYS[3])
local ev = fill(fill(ARGV[9], FILL.queue_id, id), FILL.seq, seq)
local eid = add_entry(KEYS[6], ARGV[5], nil, 'e', ev)
local lists = {{OUTBOX_SCOPE.session, ses_eps}}
if task then lists[2] = {OUTBOX_SCOPE.task, task_eps} end
route(KEYS[9], endpoints_of(lists), session_id, task_id, eid, ev)
wake(KEYS[7], WAKE_KIND.hook, id_of(KEYS[1]), session_id, 0, {ev})
return idem_done(KEYS[8], ARGV[7], ARGV[8], '', {'ok', id})
