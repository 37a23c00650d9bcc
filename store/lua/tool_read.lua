-- tool_read: a published tool, only for a principal who may see it: its
-- executor, anyone when it is open to everyone, else a principal its
-- callers name. For anybody else it does not exist, and the answer costs
-- what the answer for a missing tool costs.
-- KEYS[1] tool hash
-- ARGV[1] principal   ARGV[2] '1' to read its endpoints' sealed secrets too
-- Returns {'ok', json, executor, revision, created ms, endpoint list or '',
-- endpoint id, sealed secret, ...} | {'not_found'}
local h = redis.call('HMGET', KEYS[1], TOOL_FIELD.json, TOOL_FIELD.executor, TOOL_FIELD.revision,
  TOOL_FIELD.created, TOOL_FIELD.open, TOOL_FIELD.indexed, RECORD_FIELD.endpoints)
if not h[1] or ARGV[1] == '' then return {'not_found'} end
if not tool_visible(h[2], h[5], h[6], ARGV[1]) then return {'not_found'} end
local out = {'ok', h[1], h[2], h[3], h[4], h[7] or ''}
if ARGV[2] == '1' and h[7] then
  for _, ep in ipairs(cjson.decode(h[7])) do
    local secret = redis.call('HGET', KEYS[1], RECORD_FIELD.secret .. ep.endpointId)
    if secret then
      out[#out + 1] = ep.endpointId
      out[#out + 1] = secret
    end
  end
end
return out
