-- hook_ack: acknowledges events of a hook for one consumer group, so they are
-- never delivered to that group again.
-- KEYS[1] hook hash   KEYS[2] hook queue   KEYS[3] idempotency
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin   ARGV[5] group
-- ARGV[6..] event ids
-- Returns {'ok', acked} | {'replay', body} | {'idem_conflict'} | {'not_found'}
local r = idem_replay(KEYS[3], ARGV[1])
if r then return r end
if not owned(redis.call('HGET', KEYS[1], 'owner'), ARGV[3], ARGV[4]) then return {'not_found'} end
local has_group = false
if redis.call('EXISTS', KEYS[2]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[2])) do
    for i = 1, #g, 2 do
      if g[i] == 'name' and g[i + 1] == ARGV[5] then has_group = true end
    end
  end
end

-- Every check is done; writes start here.
local n = 0
if has_group then n = redis.call('XACK', KEYS[2], ARGV[5], unpack(ARGV, 6)) end
return idem_done(KEYS[3], ARGV[1], ARGV[2], '{"acked":' .. n .. '}', {'ok', n})
