-- log_read_kinds: reads a log (a task's or a session's) forward, keeping only
-- the events of some types, and says how far it looked: the caller reads on
-- after that, so an event it skipped is never looked at twice. It looks at a
-- bounded number of entries and bytes, whatever the log holds; it only reads.
-- With the events it kept it answers what joins them with their tasks'
-- snapshots (see append_event): each such task's revision, json and undos.
-- KEYS[1] the log   KEYS[2] for a task's log (an index), its session's log
-- KEYS[3] for a task's log, the task record (which may keep the log)
-- ARGV[1] the first stream id to look at ('-' for the log's start)
-- ARGV[2] most events to keep   ARGV[3] most entries to look at
-- ARGV[4] most bytes of entries to look at
-- ARGV[5] the key of a task record of the log's partition but the task id
-- ARGV[6..] the event types to keep (none: every type)
-- Returns {'ok', last id looked at ('' when none), '1' when it stopped before
--          the log's end (else '0'), the number of events kept,
--          id, event json, where it was cut ('' when not) for each of them,
--          then for each task that a kept event cut: task id, revision,
--          json, the number of undos, and its undos from the lowest
--          revision a kept event shows up}
-- An event cut from a task that is gone (expired) is gone with it: it is
-- looked at, not kept.
local keep = {}
for i = 6, #ARGV do keep[ARGV[i]] = true end
local all = #ARGV < 6
local limit, max_entries, max_bytes = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {'ok', '', '0', 0}
local start, looked, bytes, kept = ARGV[1], 0, 0, 0
local ids = KEYS[3] and rec_get(KEYS[3], RECORD_FIELD.log)[1]
local slog = joined_log(KEYS[1], KEYS[2], ids)
local tasks, current, lowest = {}, {}, {}

-- known is whether the task of a cut event is still there, read once: an
-- event of a task that is gone is gone with it and is not kept.
local function known(task)
  if current[task] == nil then
    local cur = rec_get(ARGV[5] .. task, 'rev', 'json', RECORD_FIELD.undos)
    current[task] = cur[1] and cur or false
    if cur[1] then tasks[#tasks + 1] = task end
  end
  return current[task] ~= false
end

local function finish(more)
  out[3] = more
  out[4] = kept
  for _, task in ipairs(tasks) do
    local cur = current[task]
    local list, fields = undo_list(cur[3]), {}
    for r = math.max(lowest[task], #list + 1), tonumber(cur[1]) - 1 do fields[#fields + 1] = RECORD_FIELD.undo .. r end
    out[#out + 1] = task
    out[#out + 1] = cur[1]
    out[#out + 1] = cur[2]
    out[#out + 1] = tonumber(cur[1]) - lowest[task]
    for r = lowest[task], math.min(#list, tonumber(cur[1]) - 1) do out[#out + 1] = list[r] end
    if #fields > 0 then
      for _, u in ipairs(rec_get(ARGV[5] .. task, unpack(fields))) do out[#out + 1] = u end
    end
  end
  return out
end

while true do
  local n = math.min(64, max_entries - looked)
  if n <= 0 or bytes >= max_bytes then return finish('1') end
  local entries = log_range(KEYS[1], slog, start, n, false, ids)
  for _, e in ipairs(entries) do
    local ev, cut = entry_event(e[2])
    looked, bytes = looked + 1, bytes + #ev
    out[2] = e[1]
    local task, rev
    if cut ~= '' then task, rev = string.match(ev, '"taskId":"([^"]*)","revision":(%d+)') end
    if (all or keep[event_type(ev)]) and (not task or known(task)) then
      out[#out + 1] = e[1]
      out[#out + 1] = ev
      out[#out + 1] = cut
      if task then
        rev = tonumber(rev)
        if not lowest[task] or rev < lowest[task] then lowest[task] = rev end
      end
      kept = kept + 1
      if kept >= limit then return finish('1') end
    end
  end
  if #entries < n then return finish('0') end
  start = '(' .. out[2]
end
