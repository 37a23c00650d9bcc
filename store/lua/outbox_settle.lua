-- outbox_settle: ends one delivery attempt of an outbox entry. Only the
-- replica whose acknowledgement takes the entry off the group's pending list
-- acts on it: another one that took the entry over in between (XAUTOCLAIM)
-- and settled it first leaves nothing to do.
-- KEYS[1] the partition's outbox   KEYS[2] the partition's retries
-- KEYS[3] the endpoint's record   KEYS[4] the session's dead letters
-- ARGV[1] consumer group   ARGV[2] entry id
-- ARGV[3] what to do: 'done' (delivered or dropped), 'retry', 'dead_letter'
--         or 'endpoint_dead'
-- ARGV[4] retry: when the next attempt is due (ms); endpoint_dead: the reason
-- ARGV[5] retry: the next attempt's fields (a JSON array, name, value ...);
--         dead_letter: the dead letter's fields
-- ARGV[6] endpoint id   ARGV[7] dead_letter: how long dead letters are kept (ms)
-- Returns {'ok'} | {'gone'}
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return {'gone'} end
redis.call('XDEL', KEYS[1], ARGV[2])
local what = ARGV[3]
if what == 'retry' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
elseif what == 'dead_letter' then
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', 1000, '*', unpack(cjson.decode(ARGV[5])))
  redis.call('PEXPIRE', KEYS[4], ARGV[7])
elseif what == 'endpoint_dead' then
  local raw = rec_get(KEYS[3], RECORD_FIELD.endpoints)[1]
  if raw then
    local list = cjson.decode(raw)
    for _, ep in ipairs(list) do
      if ep.endpointId == ARGV[6] then
        ep.status = ENDPOINT_STATUS.dead
        ep.deadReason = ARGV[4]
      end
    end
    rec_set(KEYS[3], {RECORD_FIELD.endpoints, cjson.encode(list)})
  end
end
return {'ok'}
