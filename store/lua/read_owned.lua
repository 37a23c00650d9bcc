-- read_owned: a record's json, only for a principal allowed to see it. The
-- owner (and, where asked, a task's requester and executor) is checked on
-- small fields kept beside the json (a task's are at the head of its
-- record: rec_front), so the answer for somebody else's record costs what
-- the answer for a missing one costs, whatever the record's size.
-- KEYS[1] the record (fields json, owner, and for a task requester and
--         executor, each when it is not the owner)
-- ARGV[1] principal   ARGV[2] '1' when the principal is an admin
-- ARGV[3] '1' when the task's requester and executor may read too
-- ARGV[4] '1' to read the record's notification endpoint list too
-- Returns the json, or {json, endpoint list json or false} with ARGV[4], or
-- false when there is no such record for this principal.
local h = rec_front(KEYS[1], 'owner', 'requester', 'executor')
if not h[1] then return false end
if owned(h[1], ARGV[1], ARGV[2]) or (ARGV[3] == '1' and (h[2] == ARGV[1] or h[3] == ARGV[1])) then
  if ARGV[4] == '1' then return rec_get(KEYS[1], 'json', RECORD_FIELD.endpoints) end
  return rec_get(KEYS[1], 'json')[1]
end
return false
