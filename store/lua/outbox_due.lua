-- outbox_due: moves the retries that are due back into the outbox, where
-- the consumer group hands each to one replica.
-- KEYS[1] the partition's retries   KEYS[2] the partition's outbox
-- ARGV[1] now ms   ARGV[2] most entries to move
-- Returns {'ok', moved}
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
for _, fields in ipairs(due) do
  redis.call('XADD', KEYS[2], '*', unpack(cjson.decode(fields)))
  redis.call('ZREM', KEYS[1], fields)
end
return {'ok', #due}
