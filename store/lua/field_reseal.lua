-- field_reseal: replaces a secret kept in a hash field by the same secret
-- sealed again (see reseal in the prelude).
-- KEYS[1] the record
-- ARGV[1] the field   ARGV[2] the value read   ARGV[3] the value to write
-- Returns {'ok'} | {'changed'}
if reseal(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return {'ok'} end
return {'changed'}
