-- field_reseal: replaces a secret kept in a hash field by the same secret
-- sealed again (a plain one from before secrets were sealed, or one sealed
-- with a key that no longer seals), only while the field still holds what
-- the caller read: a hash that is gone is not brought back, and a field
-- changed since is left alone.
-- KEYS[1] the hash
-- ARGV[1] the field   ARGV[2] the value read   ARGV[3] the value to write
-- Returns {'ok'} | {'changed'}
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return {'changed'} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return {'ok'}
