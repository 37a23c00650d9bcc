-- log_read_kinds: reads a log (a task's or a session's) forward, keeping only
-- the events of some types, and says how far it looked: the caller reads on
-- after that, so an event it skipped is never looked at twice. It looks at a
-- bounded number of entries and bytes, whatever the log holds; it only reads.
-- KEYS[1] the log   KEYS[2] for a task's log (an index), its session's log
-- ARGV[1] the first stream id to look at ('-' for the log's start)
-- ARGV[2] most events to keep   ARGV[3] most entries to look at
-- ARGV[4] most bytes of entries to look at   ARGV[5..] the event types to keep
--         (none: every type)
-- Returns {'ok', last id looked at ('' when none), '1' when it stopped before
--          the log's end (else '0'), id, event json, id, event json ...}
local keep = {}
for i = 5, #ARGV do keep[ARGV[i]] = true end
local all = #ARGV < 5
local limit, max_entries, max_bytes = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {'ok', '', '0'}
local start, looked, bytes, kept = ARGV[1], 0, 0, 0
local slog = joined_log(KEYS[1], KEYS[2])
while true do
  local n = math.min(64, max_entries - looked)
  if n <= 0 or bytes >= max_bytes then
    out[3] = '1'
    return out
  end
  local entries = log_range(KEYS[1], slog, start, n, false)
  for _, e in ipairs(entries) do
    local ev = e[2][2]
    looked, bytes = looked + 1, bytes + #ev
    out[2] = e[1]
    if all or keep[event_type(ev)] then
      out[#out + 1] = e[1]
      out[#out + 1] = ev
      kept = kept + 1
      if kept >= limit then
        out[3] = '1'
        return out
      end
    end
  end
  if #entries < n then return out end
  start = '(' .. out[2]
end
