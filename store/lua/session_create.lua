-- session_create: a new active session and its session.created event.
-- KEYS[1] session hash   KEYS[2] session log   KEYS[3] owner's session index
-- KEYS[4] idempotency    KEYS[5] wake stream   KEYS[6] partition's outbox
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] session id   ARGV[4] owner   ARGV[5] session json   ARGV[6] now ms
-- ARGV[7] expire-at ms   ARGV[8] event json   ARGV[9] log min id
-- KEYS[7] (only for the owner's default session) the owner's default
--         session slot, in the session's partition
-- ARGV[10] with KEYS[7]: the session id the slot must hold for this one to
--          take its place ('' for none); the session then becomes the default
-- ARGV[11] the response to keep for a repeat ('' for the session json)
-- ARGV[12] the session's notification endpoint list ('' for none)
-- ARGV[13..] endpoint id, secret, for each endpoint of that list
-- Returns {'ok', eventId} | {'replay', body} | {'idem_conflict'} | {'exists'}
--       | {'default', id}: the slot holds another session id ('' for none)
--         than ARGV[10]: somebody else made the default session first
local r = idem_replay(KEYS[4], ARGV[1])
if r then return r end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
if KEYS[7] then
  local cur = redis.call('GET', KEYS[7]) or ''
  if cur ~= ARGV[10] then return {'default', cur} end
end

redis.call('HSET', KEYS[1], 'json', ARGV[5], 'status', SESSION_STATUS.active, 'owner', ARGV[4])
save_endpoints(KEYS[1], ARGV[12], {unpack(ARGV, 13)})
local id = add_entry(KEYS[2], ARGV[9], nil, 'e', ARGV[8])
route(KEYS[6], endpoints_of({{OUTBOX_SCOPE.session, ARGV[12]}}), ARGV[3], '', id, ARGV[8])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[7])
redis.call('PEXPIREAT', KEYS[2], ARGV[7])
extend_to(ARGV[7], {KEYS[3]})
if KEYS[7] then redis.call('SET', KEYS[7], ARGV[3], 'PXAT', ARGV[7]) end
wake(KEYS[5], WAKE_KIND.session, ARGV[3], ARGV[3], 0, {ARGV[8]})
local body = ARGV[11]
if body == '' then body = ARGV[5] end
return idem_done(KEYS[4], ARGV[1], ARGV[2], body, {'ok', id})
