-- tool_put: publishes a tool, or replaces the one its executor published
-- under that name (its endpoint and secrets with it), and moves it between
-- the indexes of who may see it. The service read the tool's revision,
-- creation time and indexes first (Store.ToolState); a tool changed since
-- is not written ('moved': read again and retry).
-- KEYS[1] tool hash   KEYS[2] the partition's open index   KEYS[3] command record
-- KEYS[4 .. 3+ARGV[9]] the principal indexes (Keys.ToolsOf) that hold the tool now
-- KEYS[4+ARGV[9] ..] the principal indexes to hold it after (none when open)
-- ARGV[1] command hash ('cmd')   ARGV[2] command ttl ms   ARGV[3] name
-- ARGV[4] executor   ARGV[5] expected revision ('0': no such tool)
-- ARGV[6] expected creation ms ('0': no such tool)   ARGV[7] tool json
-- ARGV[8] '1' when anyone may call it   ARGV[9] count of indexes that hold it now
-- ARGV[10] the principals of the indexes to hold it after, a JSON array
-- ARGV[11] creation ms (kept on a replace)   ARGV[12] endpoint list
-- ARGV[13..] endpoint id, sealed secret, for each endpoint of that list
-- Returns {'ok', 'created' | 'replaced', revision} | {'taken'} | {'moved'}
local r = idem_replay(KEYS[3], ARGV[1])
if r then return r end
local h = redis.call('HMGET', KEYS[1], TOOL_FIELD.executor, TOOL_FIELD.revision, TOOL_FIELD.created)
if h[1] and h[1] ~= ARGV[4] then return {'taken'} end
if (h[2] or '0') ~= ARGV[5] or (h[3] or '0') ~= ARGV[6] then return {'moved'} end

local now_count = tonumber(ARGV[9])
redis.call('ZREM', KEYS[2], ARGV[3])
for i = 4, 3 + now_count do redis.call('ZREM', KEYS[i], ARGV[3]) end
redis.call('DEL', KEYS[1])
local rev = tonumber(ARGV[5]) + 1
redis.call('HSET', KEYS[1], TOOL_FIELD.json, ARGV[7], TOOL_FIELD.executor, ARGV[4],
  TOOL_FIELD.revision, rev, TOOL_FIELD.created, ARGV[11], TOOL_FIELD.open, ARGV[8],
  TOOL_FIELD.indexed, ARGV[10])
save_endpoints(KEYS[1], ARGV[12], {unpack(ARGV, 13)})
if ARGV[8] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[11], ARGV[3])
else
  for i = 4 + now_count, #KEYS do redis.call('ZADD', KEYS[i], ARGV[11], ARGV[3]) end
end
local how = 'replaced'
if not h[1] then how = 'created' end
return idem_done(KEYS[3], ARGV[1], ARGV[2], '', {'ok', how, rev})
