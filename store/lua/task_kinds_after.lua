-- task_kinds_after: whether a task's log holds an event of some types after
-- a revision, for a long-poll that wakes on those types only (?kinds=), and
-- the task as it is. It looks back from the newest event and stops at the
-- first at or below the revision; it looks at a bounded number of entries
-- and bytes, and when that is not enough the caller goes on from where it
-- stopped. It only reads.
-- KEYS[1] task record   KEYS[2] task log   KEYS[3] session log
-- ARGV[1] the revision   ARGV[2] where to look from ('+' for the newest
--         event, else '(' and the last id looked at)
-- ARGV[3] most entries to look at   ARGV[4] most bytes of entries to look at
-- ARGV[5..] the event types
-- Returns {'found', task json} | {'none', task json}
--       | {'more', task json, last id looked at} | {'not_found'}
local rec = rec_get(KEYS[1], 'json', RECORD_FIELD.log)
local json, ids = rec[1], rec[2]
if not json then return {'not_found'} end
local want = {}
for i = 5, #ARGV do want[ARGV[i]] = true end
local after, max_entries, max_bytes = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local start, looked, bytes = ARGV[2], 0, 0
local slog = joined_log(KEYS[2], KEYS[3], ids)
while true do
  local n = math.min(64, max_entries - looked)
  if n <= 0 or bytes >= max_bytes then return {'more', json, string.sub(start, 2)} end
  local entries = log_range(KEYS[2], slog, start, n, true, ids)
  for _, e in ipairs(entries) do
    local ev = entry_event(e[2])
    looked, bytes = looked + 1, bytes + #ev
    -- A task event's revision comes before its data; a quote inside a
    -- string is escaped, so no text in the event can look like it.
    local rev = string.match(ev, '"revision":(%d+)')
    if rev and tonumber(rev) <= after then return {'none', json} end
    if want[event_type(ev)] then return {'found', json} end
    start = '(' .. e[1]
  end
  if #entries < n then return {'none', json} end
end
