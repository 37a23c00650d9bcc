-- hook_read: the next batch of a hook's events for one consumer of a group,
-- at-least-once. In order: the consumer's own events whose visibility ran out,
-- then events whose visibility ran out claimed from other consumers of the
-- group, then new events.
--
-- An event's visibility is the one asked by the read that delivered it, not
-- by the read that looks at it later: a delivery gives its event an idle
-- time of ceiling - visibility (XCLAIM IDLE), so every read takes back what
-- has been idle for the ceiling, the hook's HOOK_HASH.ceiling. A hook made
-- without one (by an earlier version) is read as it was written: an event is
-- taken back once idle for the visibility of the read that asks.
--
-- An event about to be delivered more than max deliveries times moves to
-- the dead-letter stream instead and is acknowledged. Never blocks: the
-- caller waits on its replica's wake-ups and calls again. It also says
-- whether the hook still takes posts, decided as hook_ingest decides it, so
-- a reader learns in the same step that nothing more will arrive.
-- KEYS[1] hook hash   KEYS[2] hook queue   KEYS[3] dead-letter stream
-- KEYS[4] task record (any key of the slot for a session hook: not read)
-- KEYS[5] session hash
-- ARGV[1] principal   ARGV[2] '1' when the principal is an admin
-- ARGV[3] group   ARGV[4] consumer   ARGV[5] count   ARGV[6] visibility ms
-- ARGV[7] max deliveries   ARGV[8] now ms   ARGV[9] most groups a hook may have
-- ARGV[10] '1' when the hook belongs to a task
-- Returns {'ok', pending, dead-lettered, redelivered, next visible in ms (-1: none),
--          {{eventId, deliveryCount, {field, value, ...}}, ...},
--          hook status (HOOK_STATUS.open or .closed), close reason ('' when
--          open, else one of CLOSED)}
--       | {'not_found'} | {'too_many_groups'}
local h = redis.call('HMGET', KEYS[1], 'owner', 'kexp', 'status', 'exp', HOOK_HASH.ceiling)
if not owned(h[1], ARGV[1], ARGV[2]) then return {'not_found'} end
local task = nil
if ARGV[10] == '1' then task = KEYS[4] end
local reason = hook_closed_reason(h[3], h[4], tonumber(ARGV[8]), task, KEYS[5])
local hook_status = HOOK_STATUS.open
if reason then hook_status = HOOK_STATUS.closed else reason = '' end
local q, dead, group, consumer = KEYS[2], KEYS[3], ARGV[3], ARGV[4]
local count, vis, max = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
-- reclaim: how long an event must have been idle to be delivered again.
-- stamp: the idle time a delivery gives its event (nil: Redis's own, 0).
local reclaim, stamp = vis, nil
local ceiling = tonumber(h[5])
if ceiling then
  if vis > ceiling then vis = ceiling end
  reclaim = ceiling
  if vis < ceiling then stamp = ceiling - vis end
end

-- stamp_opts are XCLAIM's options that give a delivery its stamp, with the
-- event's delivery count as it is to be (none without a stamp).
local function stamp_opts(deliveries)
  if not stamp then return {} end
  return {'IDLE', stamp, 'RETRYCOUNT', deliveries}
end

-- restamp stamps events another command just delivered (ids), whose
-- delivery count is deliveries.
local function restamp(ids, deliveries)
  if not stamp or #ids == 0 then return end
  local args = {'XCLAIM', q, group, consumer, 0}
  for _, v in ipairs(ids) do args[#args + 1] = v end
  for _, v in ipairs(stamp_opts(deliveries)) do args[#args + 1] = v end
  args[#args + 1] = 'JUSTID'
  redis.call(unpack(args))
end

local has_group = false
local groups = 0
if redis.call('EXISTS', q) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', q)) do
    groups = groups + 1
    for i = 1, #g, 2 do
      if g[i] == 'name' and g[i + 1] == group then has_group = true end
    end
  end
end
if not has_group and groups >= tonumber(ARGV[9]) then return {'too_many_groups'} end

-- Every check is done; writes start here.
if not has_group then
  -- From the start: a new group sees every event the hook holds.
  redis.call('XGROUP', 'CREATE', q, group, '0', 'MKSTREAM')
  redis.call('PEXPIREAT', q, h[2])
end

local out, dead_n, again = {}, 0, 0

local function bury(id, deliveries)
  local e = redis.call('XRANGE', q, id, id)
  if e[1] then
    local f = e[1][2]
    local fields = {}
    for i = 1, #f do fields[i] = f[i] end
    for _, v in ipairs({HOOK_FIELD.dead_event_id, id, HOOK_FIELD.dead_group, group,
        HOOK_FIELD.dead_deliveries, deliveries, HOOK_FIELD.dead_at, ARGV[8]}) do
      fields[#fields + 1] = v
    end
    redis.call('XADD', dead, 'MAXLEN', '~', 10000, '*', unpack(fields))
    redis.call('PEXPIREAT', dead, h[2])
    dead_n = dead_n + 1
  end
  redis.call('XACK', q, group, id)
end

local function deliver(id, deliveries, fields)
  out[#out + 1] = {id, deliveries, fields}
  if deliveries > 1 then again = again + 1 end
end

-- 1. This consumer's own events whose visibility ran out.
if count > 0 then
  for _, p in ipairs(redis.call('XPENDING', q, group, 'IDLE', reclaim, '-', '+', count, consumer)) do
    if #out >= count then break end
    local id, deliveries = p[1], tonumber(p[4])
    if deliveries >= max then
      bury(id, deliveries)
    else
      local c = redis.call('XCLAIM', q, group, consumer, reclaim, id, unpack(stamp_opts(deliveries + 1)))
      if c[1] then deliver(id, deliveries + 1, c[1][2]) end
    end
  end
end

-- 2. Events whose visibility ran out, claimed from the group's other consumers.
local cursor = '0-0'
for _ = 1, 8 do
  local want = count - #out
  if want <= 0 then break end
  local r = redis.call('XAUTOCLAIM', q, group, consumer, reclaim, cursor, 'COUNT', want)
  for _, e in ipairs(r[2]) do
    local p = redis.call('XPENDING', q, group, e[1], e[1], 1)
    local deliveries = p[1] and tonumber(p[1][4]) or 1
    if deliveries > max then
      bury(e[1], deliveries - 1)
    else
      restamp({e[1]}, deliveries)
      deliver(e[1], deliveries, e[2])
    end
  end
  cursor = r[1]
  if cursor == '0-0' then break end
end

-- 3. New events.
local want = count - #out
if want > 0 then
  local r = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', want, 'STREAMS', q, '>')
  if r and r[1] then
    local ids = {}
    for _, e in ipairs(r[1][2]) do
      deliver(e[1], 1, e[2])
      ids[#ids + 1] = e[1]
    end
    restamp(ids, 1)
  end
end

local summary = redis.call('XPENDING', q, group)
local pending = tonumber(summary[1])

-- With nothing to deliver, when the next pending event (of the oldest 100)
-- becomes visible again; the caller's slow re-check covers the rest.
local next_visible = -1
if #out == 0 and pending > 0 then
  for _, p in ipairs(redis.call('XPENDING', q, group, '-', '+', 100)) do
    local left = reclaim - tonumber(p[3])
    if left < 0 then left = 0 end
    if next_visible < 0 or left < next_visible then next_visible = left end
  end
end
return {'ok', pending, dead_n, again, next_visible, out, hook_status, reason}
