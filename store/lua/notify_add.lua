-- notify_add: adds one notification endpoint to a session or a task.
-- KEYS[1] the record (a session's hash or a task's record)   KEYS[2] command record
-- ARGV[1] idempotency body hash, or 'cmd' for a command id the server made   ARGV[2] idempotency ttl ms
-- ARGV[3] principal   ARGV[4] '1' when the principal is an admin
-- ARGV[5] the endpoint's view json   ARGV[6] endpoint id   ARGV[7] its secret
-- ARGV[8] most endpoints a record may hold (its executor's not counted)
-- ARGV[9] the answer to keep for a repeat
-- Returns {'ok', endpoint list json} | {'replay', body} | {'idem_conflict'}
--       | {'not_found'} | {'too_many'}
local r = idem_replay(KEYS[2], ARGV[1])
if r then return r end
local h = rec_get(KEYS[1], 'owner', RECORD_FIELD.endpoints)
if not owned(h[1], ARGV[3], ARGV[4]) then return {'not_found'} end
local list, own = {}, 0
if h[2] then list = cjson.decode(h[2]) end
for _, ep in ipairs(list) do
  if not ep[ENDPOINT_MEMBER.by_executor] then own = own + 1 end
end
if own >= tonumber(ARGV[8]) then return {'too_many'} end

list[#list + 1] = cjson.decode(ARGV[5])
local encoded = cjson.encode(list)
save_endpoints(KEYS[1], encoded, {ARGV[6], ARGV[7]})
return idem_done(KEYS[2], ARGV[1], ARGV[2], ARGV[9], {'ok', encoded})
