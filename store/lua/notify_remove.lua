-- notify_remove: removes one notification endpoint of a session or a task;
-- entries already in the outbox for it are dropped when they come up. The
-- task executor's endpoints are not the owner's to remove: not found.
-- KEYS[1] the record   KEYS[2] command record
-- ARGV[1] command hash ('cmd')   ARGV[2] command record ttl ms
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin   ARGV[5] endpoint id
-- Returns {'ok', the endpoint list left ('' for none)} | {'not_found'}
local r = idem_replay(KEYS[2], ARGV[1])
if r then return r end
local h = rec_get(KEYS[1], 'owner', RECORD_FIELD.endpoints)
if not owned(h[1], ARGV[3], ARGV[4]) or not h[2] then return {'not_found'} end
local list, keep = cjson.decode(h[2]), {}
for _, ep in ipairs(list) do
  if ep.endpointId ~= ARGV[5] or ep[ENDPOINT_MEMBER.by_executor] then keep[#keep + 1] = ep end
end
if #keep == #list then return {'not_found'} end

local left = false
if #keep > 0 then left = cjson.encode(keep) end
rec_set(KEYS[1], {RECORD_FIELD.endpoints, left, RECORD_FIELD.secret .. ARGV[5], false})
return idem_done(KEYS[2], ARGV[1], ARGV[2], '', {'ok', left or ''})
