-- tool_delete: removes a tool its executor published, from its record and
-- every index. Tasks started through it keep their copy of its endpoint.
-- The service read the tool's revision, creation time and indexes first
-- (Store.ToolState); a tool changed since is not deleted ('moved').
-- KEYS[1] tool hash   KEYS[2] the partition's open index   KEYS[3] command record
-- KEYS[4..] the principal indexes (Keys.ToolsOf) that hold the tool
-- ARGV[1] command hash ('cmd')   ARGV[2] command ttl ms   ARGV[3] name
-- ARGV[4] executor   ARGV[5] expected revision   ARGV[6] expected creation ms
-- Returns {'ok', json, endpoint list or ''} | {'not_found'} | {'moved'}
local r = idem_replay(KEYS[3], ARGV[1])
if r then return r end
local h = redis.call('HMGET', KEYS[1], TOOL_FIELD.executor, TOOL_FIELD.revision, TOOL_FIELD.created,
  TOOL_FIELD.json, RECORD_FIELD.endpoints)
if not h[1] or h[1] ~= ARGV[4] then return {'not_found'} end
if h[2] ~= ARGV[5] or h[3] ~= ARGV[6] then return {'moved'} end

redis.call('ZREM', KEYS[2], ARGV[3])
for i = 4, #KEYS do redis.call('ZREM', KEYS[i], ARGV[3]) end
redis.call('DEL', KEYS[1])
return idem_done(KEYS[3], ARGV[1], ARGV[2], '', {'ok', h[4], h[5] or ''})
