-- prelude.lua is put in front of every script. It and the scripts write the
-- names shared with Go as WAKE_KIND.task, HOOK_STATUS.open, CLOSED.expired,
-- ... and the sets Go gives them (TERMINAL_STATUSES) by name
-- (store/luanames.go); each is replaced by its value when the scripts are
-- loaded, so no status, reason or field name Go chose is spelled here. It
-- holds the helpers the scripts share; none of them writes before the
-- caller's checks are done.

-- owned is authz.Principal.CanAccess, the rule of who may see and change a
-- record: its owner, or an admin; a principal with no id owns nothing.
-- owner is the record's owner field (nil or false: no such record),
-- principal and admin the script's ARGV for them (admin: '1' for an admin).
-- Every script that checks ownership asks it.
local function owned(owner, principal, admin)
  if not owner then return false end
  return (principal ~= '' and owner == principal) or admin == '1'
end

-- id_of is the id a record's key ends with (store.Keys): what follows its
-- last colon, since no id holds one. A script given a record's key reads
-- its id from it rather than being sent it again.
local function id_of(key)
  return string.match(key, '([^:]+)$')
end

-- tool_visible is who may see a published tool, and call it: its executor,
-- anyone when open is '1', else a principal that indexed names (the tool
-- hash's TOOL_FIELD.indexed: a JSON array of its callers and its executor).
-- executor is nil or false when there is no such tool.
local function tool_visible(executor, open, indexed, principal)
  if principal == '' or not executor then return false end
  if executor == principal or open == '1' then return true end
  for _, who in ipairs(cjson.decode(indexed or '[]')) do
    if who == principal then return true end
  end
  return false
end

-- terminal holds the task statuses no command changes any more
-- (wire.Terminal, as Go gives them): terminal[status] is true for those.
local terminal = TERMINAL_STATUSES

-- A task's record is one Redis string, not a hash: a hash whose snapshot
-- passes 64 bytes is a hash table, where each field costs a table entry
-- and two allocations. The string holds, each ended by a newline, its
-- head, a JSON object of the small fields a create writes (RECORD_HEAD:
-- rev, status, owner, requester, executor, kind); the rest of its fields
-- but the three below as a JSON object (notification endpoints, Slack
-- messages ...; most tasks have none: {}); its snapshot ('json') as it
-- is; and the lengths of its log ids and its command records; then those
-- two and its list of undos (the fields kept as they are: r.raw), to the
-- end. Compact JSON holds no raw newline, so the first four newlines end
-- the first four parts. cjson takes the objects apart and puts them
-- together in C, where a format walked field by field in Lua cost each
-- command about 10 µs more than a hash did; what every command reads and
-- writes (the snapshot, log, commands and undos), and what a log read
-- joins, is read with no decoding at all. The objects come first, so a
-- read of the string's first bytes finds them (rec_front,
-- store.readHeads). Every other record (a session's, a hook's, a tool's),
-- and a task's written by an earlier version, is a hash, read and written
-- as hashes are until it expires. The rec_ helpers read and write either,
-- as HMGET, HSET and HDEL would a hash; a script decodes a string record
-- once, and its rest only when it reads or writes a field of it.
local RECORD_HEAD = {rev = true, status = true, owner = true, requester = true, executor = true, kind = true}
local RECORD_IS_HASH = {}
local RECS = {}

-- is_task_record tells whether key is a task's record: its id follows
-- '}:task:' and ends the key (two plain searches, which cost far less than
-- a pattern's).
local function is_task_record(key)
  local _, e = string.find(key, '}:task:', 1, true)
  return e ~= nil and not string.find(key, ':', e + 1, true)
end

-- rec_objects takes apart the two objects a string record s (or its first
-- bytes) begins with: the record with its head decoded and its rest as it
-- is (no snapshot, no fields kept as they are), and where the rest ends;
-- nil when s ends before they do.
local function rec_objects(s)
  local a = string.find(s, '\n', 1, true)
  local b = a and string.find(s, '\n', a + 1, true)
  if not b then return nil end
  return {head = cjson.decode(string.sub(s, 1, a - 1)), rest_raw = string.sub(s, a + 1, b - 1), raw = {}}, b
end

local function rec_decode(s)
  local r, b = rec_objects(s)
  local c = string.find(s, '\n', b + 1, true)
  local log_len, commands_len, d = string.match(s, '^(%d+) (%d+)\n()', c + 1)
  local e = d + log_len
  local f = e + commands_len
  r.json = string.sub(s, b + 1, c - 1)
  r.raw = {[RECORD_FIELD.log] = string.sub(s, d, e - 1), [RECORD_FIELD.commands] = string.sub(s, e, f - 1),
    [RECORD_FIELD.undos] = string.sub(s, f)}
  return r
end

local function rec_rest(r)
  if not r.rest then r.rest = cjson.decode(r.rest_raw) end
  return r.rest
end

local function rec_field(r, name)
  if name == 'json' then return r.json end
  local raw = r.raw[name]
  if raw then return raw ~= '' and raw end
  if RECORD_HEAD[name] then return r.head[name] end
  return rec_rest(r)[name]
end

local function rec_put(r, name, v)
  if v ~= false then v = v .. '' else v = nil end
  if name == 'json' then
    r.json = v or ''
  elseif r.raw[name] then
    r.raw[name] = v or ''
  elseif RECORD_HEAD[name] then
    r.head[name] = v
  else
    rec_rest(r)[name] = v
  end
end

local function rec_encode(r)
  local rest = r.rest_raw
  if r.rest then rest = cjson.encode(r.rest) end
  local log, commands = r.raw[RECORD_FIELD.log], r.raw[RECORD_FIELD.commands]
  return cjson.encode(r.head) .. '\n' .. rest .. '\n' .. r.json .. '\n' .. #log .. ' ' .. #commands .. '\n' ..
    log .. commands .. r.raw[RECORD_FIELD.undos]
end

-- rec_read is the record at key: its decoded string, RECORD_IS_HASH, or
-- false when there is none. Only a task's key (its id follows 'task:' and
-- ends the key) can hold a string.
local function rec_read(key)
  local r = RECS[key]
  if r == nil then
    r = RECORD_IS_HASH
    if is_task_record(key) then
      local v = redis.pcall('GET', key)
      if type(v) ~= 'table' then r = v and rec_decode(v) end
    end
    RECS[key] = r
  end
  return r
end

-- rec_get answers the fields named of the record at key as HMGET does.
local function rec_get(key, ...)
  local r = rec_read(key)
  if r == RECORD_IS_HASH then return redis.call('HMGET', key, ...) end
  local out = {}
  for i, name in ipairs({...}) do out[i] = (r and rec_field(r, name)) or false end
  return out
end

-- rec_front answers fields of a record's two objects (any but the
-- snapshot and the fields kept as they are) as rec_get does, from the
-- first RECORD_FRONT_BYTES of a string record when both objects end there,
-- so that a look at the owner or status of a large task, or at its
-- notification endpoints, does not copy its snapshot into the script.
local RECORD_FRONT_BYTES = 4096

local function rec_front(key, ...)
  local names = {...}
  for _, name in ipairs(names) do
    if name == 'json' or name == RECORD_FIELD.log or name == RECORD_FIELD.commands or name == RECORD_FIELD.undos then
      return rec_get(key, ...)
    end
  end
  if RECS[key] ~= nil or not is_task_record(key) then return rec_get(key, ...) end
  local v = redis.pcall('GETRANGE', key, 0, RECORD_FRONT_BYTES - 1)
  local r = type(v) == 'string' and rec_objects(v)
  if not r then return rec_get(key, ...) end
  local out = {}
  for i, name in ipairs(names) do out[i] = rec_field(r, name) or false end
  return out
end

-- rec_set writes fields of the record at key (kv: name, value, ...; a
-- value of false takes the field out) as HSET and HDEL would, keeping its
-- expiry. A record that is gone is not brought back.
local function rec_set(key, kv)
  local r = rec_read(key)
  if r == RECORD_IS_HASH then
    local set, del = {}, {}
    for i = 1, #kv, 2 do
      if kv[i + 1] == false then
        del[#del + 1] = kv[i]
      else
        set[#set + 1] = kv[i]
        set[#set + 1] = kv[i + 1]
      end
    end
    if #set > 0 then redis.call('HSET', key, unpack(set)) end
    if #del > 0 then redis.call('HDEL', key, unpack(del)) end
    return
  end
  if not r then return end
  for i = 1, #kv, 2 do rec_put(r, kv[i], kv[i + 1]) end
  redis.call('SET', key, rec_encode(r), 'KEEPTTL')
end

-- rec_create writes a new task record (kv as rec_set takes it) as a string
-- that expires at at_ms.
local function rec_create(key, kv, at_ms)
  local r = {head = {}, rest = {}, json = '',
    raw = {[RECORD_FIELD.log] = '', [RECORD_FIELD.commands] = '', [RECORD_FIELD.undos] = ''}}
  for i = 1, #kv, 2 do rec_put(r, kv[i], kv[i + 1]) end
  redis.call('SET', key, rec_encode(r), 'PXAT', at_ms)
  RECS[key] = r
end

-- Every write carries a command id: the caller's idempotency key, or one the
-- server made for this one command (hash IDEM.command). A script run again with the
-- same id (a client library re-sending after a timeout, a retry after a
-- dropped connection) answers what the first run answered and changes
-- nothing.
--
-- idem_replay answers a repeated command: nil when there is no record, the
-- first run's reply for a server-made id, {'replay', body} for a caller's
-- key with the same body, {'idem_conflict'} for another body.
--
-- A task command's record in its task record (IDEM.task_record) is the
-- task script's own to read and write (command_replay, commands_with).
-- The record of another server-made id is a string (the reply's JSON), read and
-- written only by the script that made it (a re-run is the same script from
-- the same server); a caller's key is a hash (h: body hash, b: body).
local function idem_replay(key, hash)
  if hash == '' or hash == IDEM.task_record then return nil end
  if hash == IDEM.command then
    local rec = redis.call('GET', key)
    if not rec then return nil end
    return cjson.decode(rec)
  end
  local rec = redis.call('HMGET', key, 'h', 'b')
  if not rec[1] then return nil end
  if rec[1] ~= hash then return {'idem_conflict'} end
  return {'replay', rec[2]}
end

-- idem_done records the command and returns reply: for a server-made id the
-- reply itself (it is small), for a caller's key the response body, kept for
-- replay.
local function idem_done(key, hash, ttl, body, reply)
  if hash == '' or hash == IDEM.task_record then return reply end
  if hash == IDEM.command then
    redis.call('SET', key, cjson.encode(reply), 'PX', ttl)
    return reply
  end
  redis.call('HSET', key, 'h', hash, 'b', body)
  redis.call('PEXPIRE', key, ttl)
  return reply
end

-- A task command without a caller's key (IDEM.task_record) is recorded in
-- the task record itself, in field RECORD_FIELD.commands: the ids and replies
-- of its last COMMANDS_KEPT such commands, a line each: the id, then the
-- reply's members (an outcome and event ids, none of which holds a space or
-- a newline), separated by spaces. An older version kept the list as JSON,
-- which reads as well (commands_json). The scripts that write a task read and
-- write its record anyway, so the command record costs no key and no call of its
-- own. A re-run of a command (the store's retry after a lost reply) comes
-- within seconds; three commands on one task in between are far more than
-- such a window sees.
local COMMANDS_KEPT = 3

-- commands_json is a commands field kept as JSON by the older version
-- (recorded) as lines.
local function commands_json(recorded)
  local lines = {}
  for i, c in ipairs(cjson.decode(recorded)) do lines[i] = c[1] .. ' ' .. table.concat(c[2], ' ') end
  return table.concat(lines, '\n')
end

-- command_replay is the first run's reply of command id, if the task's
-- commands field (recorded; nil or false when there is none) holds it. The
-- field is searched as it is, with no table made of it: every command
-- asks, and almost none is a re-run.
local function command_replay(recorded, id)
  if not recorded then return nil end
  if string.sub(recorded, 1, 1) == '[' then recorded = commands_json(recorded) end
  local from = string.find('\n' .. recorded, '\n' .. id .. ' ', 1, true)
  if not from then return nil end
  local words = {}
  for w in string.gmatch(string.match(recorded, '^[^\n]*', from), '[^ ]+') do words[#words + 1] = w end
  return {unpack(words, 2)}
end

-- commands_with is the commands field with command id and its reply added,
-- the oldest dropped beyond COMMANDS_KEPT.
local function commands_with(recorded, id, reply)
  local line = id .. ' ' .. table.concat(reply, ' ')
  if not recorded then return line end
  if string.sub(recorded, 1, 1) == '[' then recorded = commands_json(recorded) end
  local n = select(2, string.gsub(recorded, '\n', '')) + 1
  while n >= COMMANDS_KEPT do
    recorded = string.sub(recorded, string.find(recorded, '\n', 1, true) + 1)
    n = n - 1
  end
  return recorded .. '\n' .. line
end

-- A task's log is an index into its session's log: the ids of the task's
-- events, each written as log_member writes it (LOG_MEMBER_LEN bytes) so
-- that the strings' order is the ids'. The events themselves are in the
-- session log under the same ids, where every task event goes anyway: each
-- is stored once. The ids are kept in the task's record, one after another in
-- field RECORD_FIELD.log, which a command reads and writes anyway: the log
-- costs no key and no call of its own. A read finds an id by bisection. A
-- log that outgrows LOG_IDS_IN_RECORD ids moves to a sorted set at the
-- task log's key (members at score 0, ordered as strings), where tasks
-- created before kept theirs, and grows there; one older still keeps its
-- log as a stream of its own, appended to and read as a stream until it
-- expires (is_stream).
local LOG_MEMBER_LEN = 27
local LOG_IDS_IN_RECORD = 64

local function format_id(ms, seq)
  return string.format('%d-%d', ms, seq)
end

local function log_member(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return string.format('%016d-%010d', tonumber(ms), tonumber(seq))
end

local function member_id(m)
  local ms, seq = string.match(m, '^(%d+)-(%d+)$')
  return format_id(tonumber(ms), tonumber(seq))
end

local function is_stream(key)
  return redis.call('TYPE', key)['ok'] == 'stream'
end

-- A task event is kept without its task's snapshot: the entry's event
-- field holds its JSON with the snapshot cut out, and EVENT_FIELD.cut the
-- byte offset it was cut at ('' for an event that carries no snapshot,
-- which has no such field). The task record keeps the current snapshot and,
-- for each revision before it, what takes the next one back to it
-- (RECORD_FIELD.undo followed by the revision): a read joins them again.
-- An event that leaves Redis as it is (an outbox delivery, a task log of
-- the older layout) is kept whole.
--
-- A task event whose head is the one Go writes (events.AppendHead, without
-- the session), as every task event's is, is kept as its parts, which Go
-- takes apart (store.eventParts), without the JSON around them, in one
-- field (EVENT_FIELD.parts), each part ended by EVENT_PART.sep (a byte no
-- JSON text holds): its type, "at", task id, revision, what comes before
-- the snapshot in its data ('' for EVENT_DATA.task_first, the task first,
-- as most events have it), then what follows the snapshot. The names and
-- quotes of its head were about a third of what the session log kept of
-- each event, and one field is one value for a reader to take apart, where
-- five were five. entry_event, and Go's storedEvent, write the head again
-- from them, byte for byte. An entry of another event, or written before,
-- keeps its JSON in field 'e' and, when cut, the offset in EVENT_FIELD.cut.

-- parts_event is a task event kept as its parts (see append_event) as the
-- JSON it was cut from: its head written again, the bytes it had, then
-- what followed the snapshot; and the offset the snapshot was cut at.
local function parts_event(parts)
  local sep = EVENT_PART.sep
  local p = '([^' .. sep .. ']*)' .. sep
  local typ, time, task, rev, data, tail = string.match(parts, '^' .. p .. p .. p .. p .. p .. '(.*)$')
  if data == '' then data = EVENT_DATA.task_first end
  local head = '{"type":"' .. typ .. '","at":"' .. time .. '","taskId":"' .. task .. '","revision":' .. rev ..
    ',"data":' .. data
  return head .. tail, string.format('%d', #head)
end

-- whole_event is the event ev cut at cut with snapshot put back, and with
-- it the session the event's head leaves to its snapshot, after "at", as
-- Go's events.AppendJoined puts it back on a read.
local function whole_event(ev, cut, snapshot, session)
  if cut == '' then return ev end
  if cut == EVENT_FORM.parts then ev, cut = parts_event(ev) end
  local at = tonumber(cut)
  local _, after_at = string.find(ev, ',"at":"[^"]*"')
  return string.sub(ev, 1, after_at) .. ',"sessionId":' .. cjson.encode(session) ..
    string.sub(ev, after_at + 1, at) .. snapshot .. string.sub(ev, at + 1)
end


-- A command sends a task's new snapshot whole, or, when that is shorter,
-- as the edits that take the snapshot the task record holds to it
-- (snapdelta.Edits, which says their form): '=', the first 16 hex digits
-- of the SHA-1 of the snapshot they were made for, ';', then each edit as
-- offset, bytes replaced and bytes inserted, ':', and the bytes inserted.
-- new_snapshot is the new snapshot: given whole, or cur with the edits
-- given applied; nil when they were made for other bytes than cur.
local function new_snapshot(given, cur)
  if string.sub(given, 1, 1) ~= '=' then return given end
  local base, pos = string.match(given, '^=(%x+);()')
  if not cur or base ~= string.sub(redis.sha1hex(cur), 1, 16) then return nil end
  local parts, from = {}, 1
  while pos <= #given do
    local at, replaced, inserted, body = string.match(given, '^(%d+),(%d+),(%d+):()', pos)
    if not body then error('malformed snapshot edits') end
    at, replaced, inserted = tonumber(at), tonumber(replaced), tonumber(inserted)
    parts[#parts + 1] = string.sub(cur, from, at)
    parts[#parts + 1] = string.sub(given, body, body + inserted - 1)
    from = at + replaced + 1
    pos = body + inserted
  end
  parts[#parts + 1] = string.sub(cur, from)
  return table.concat(parts)
end

-- A task record keeps the undo of each revision before its current one
-- (what takes the next revision's json back to it). The first
-- UNDOS_IN_RECORD of them are kept in one field, RECORD_FIELD.undos, one
-- after another, each ended by a newline (compact JSON holds none): a
-- field of its own costs Redis far more than the bytes of most undos. The
-- later ones, and every undo of a task written before, are kept in a field
-- each, RECORD_FIELD.undo followed by the revision. A command reads the
-- list with the rest of the record, so keeping it costs no call.
local UNDOS_IN_RECORD = 64

-- undo_list is the undos kept in the list field (undos: its value, nil or
-- false when there is none), in revision order from revision 1.
local function undo_list(undos)
  local list = {}
  if not undos then return list end
  for u in string.gmatch(undos, '([^\n]*)\n') do list[#list + 1] = u end
  return list
end

-- undo_keep adds to fields (for the caller's rec_set of the task record) the
-- undo of revision rev: at the end of the list (undos, as undo_list takes
-- it) while the list holds every revision before and has room, else in a
-- field of its own.
local function undo_keep(fields, undos, rev, undo)
  local kept = 0
  if undos then kept = select(2, string.gsub(undos, '\n', '')) end
  if kept == tonumber(rev) - 1 and kept < UNDOS_IN_RECORD then
    fields[#fields + 1] = RECORD_FIELD.undos
    fields[#fields + 1] = (undos or '') .. undo .. '\n'
  else
    fields[#fields + 1] = RECORD_FIELD.undo .. rev
    fields[#fields + 1] = undo
  end
end

-- task_log_append adds event id to the task log at key and answers whether
-- that log is a stream (the older layout), which gets the event whole
-- (whole(), called only then). stream is what an earlier append of the same
-- script answered, or nil for the first: that one adds to the sorted set
-- and learns from a refusal that the key holds a stream, so a log of
-- today's layout costs no look at its type.
local function task_log_append(key, id, whole, stream)
  if not stream then
    local added = redis.pcall('ZADD', key, 0, log_member(id))
    if type(added) ~= 'table' or not added.err then return false end
  end
  redis.call('XADD', key, id, 'e', whole())
  return true
end

-- task_log_keep adds the events of new_ids to a task log kept in the task
-- record at rec (ids, the field's value): the field's new value goes into
-- fields, for the caller's rec_set of that record. A log that outgrows
-- LOG_IDS_IN_RECORD moves to the sorted set at key instead, to expire at
-- expire_at ms (the task's; 0 when the caller does not know it: the record
-- says), and the field goes.
local function task_log_keep(fields, ids, new_ids, key, rec, expire_at)
  local parts = {ids}
  for _, id in ipairs(new_ids) do parts[#parts + 1] = log_member(id) end
  local all = table.concat(parts)
  if #all <= LOG_IDS_IN_RECORD * LOG_MEMBER_LEN then
    fields[#fields + 1] = RECORD_FIELD.log
    fields[#fields + 1] = all
    return
  end
  local members = {}
  for i = 1, #all, LOG_MEMBER_LEN do
    members[#members + 1] = 0
    members[#members + 1] = string.sub(all, i, i + LOG_MEMBER_LEN - 1)
  end
  redis.call('ZADD', key, unpack(members))
  local at = tonumber(expire_at)
  if at <= 0 then at = redis.call('PEXPIRETIME', rec) end
  if at > 0 then redis.call('PEXPIREAT', key, at) end
  fields[#fields + 1] = RECORD_FIELD.log
  fields[#fields + 1] = false
end

-- ids_range is log_range over a task log kept in its record (ids).
local function ids_range(ids, slog, start, n, rev)
  local count = #ids / LOG_MEMBER_LEN
  local function at(i) return string.sub(ids, (i - 1) * LOG_MEMBER_LEN + 1, i * LOG_MEMBER_LEN) end
  -- above is the first place whose id is above m (or, with eq, equal to it).
  local function above(m, eq)
    local lo, hi = 1, count + 1
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local v = at(mid)
      if v > m or (eq and v == m) then hi = mid else lo = mid + 1 end
    end
    return lo
  end
  local i
  if start == '-' then
    i = 1
  elseif start == '+' then
    i = count
  else
    local excl = string.sub(start, 1, 1) == '('
    local m = log_member(excl and string.sub(start, 2) or start)
    if rev then i = above(m, excl) - 1 else i = above(m, not excl) end
  end
  local out, step = {}, rev and -1 or 1
  while #out < n and i >= 1 and i <= count do
    local id = member_id(at(i))
    local e = redis.call('XRANGE', slog, id, id)
    if e[1] then out[#out + 1] = e[1] end
    i = i + step
  end
  return out
end

-- joined_log is the session log slog that a task's log at key is joined
-- with to read it, or nil when key is a stream of its own (a session's log,
-- given no slog, or a task's of the older layout). ids is the log's value
-- in the task record, when the record keeps it: key is then not looked at. A
-- script that reads a log in several calls to log_range asks once.
local function joined_log(key, slog, ids)
  if slog and (ids or not is_stream(key)) then return slog end
  return nil
end

-- log_range reads up to n entries of a log as XRANGE (or, with rev,
-- XREVRANGE) answers them, from start: '-' or '+' for an end, an id, or
-- '(' and an id to leave that id out. The log is the stream at key, or,
-- with slog (see joined_log), a task's log joined with the session log
-- slog: the ids kept in its record (ids, the field's value, when it has one),
-- or its index at key. An id whose event the session log no longer holds
-- (trimmed) is passed over.
local function log_range(key, slog, start, n, rev, ids)
  if ids then return ids_range(ids, slog, start, n, rev) end
  if not slog then
    if rev then return redis.call('XREVRANGE', key, start, '-', 'COUNT', n) end
    return redis.call('XRANGE', key, start, '+', 'COUNT', n)
  end
  local from = start
  if string.sub(start, 1, 1) == '(' then
    from = '(' .. log_member(string.sub(start, 2))
  elseif start ~= '-' and start ~= '+' then
    from = '[' .. log_member(start)
  end
  local out = {}
  while #out < n do
    local members
    if rev then
      members = redis.call('ZREVRANGEBYLEX', key, from, '-', 'LIMIT', 0, n - #out)
    else
      members = redis.call('ZRANGEBYLEX', key, from, '+', 'LIMIT', 0, n - #out)
    end
    if #members == 0 then return out end
    for _, m in ipairs(members) do
      local id = member_id(m)
      local e = redis.call('XRANGE', slog, id, id)
      if e[1] then out[#out + 1] = e[1] end
    end
    from = '(' .. members[#members]
  end
  return out
end

-- add_entry appends the fields given to the stream at key, trimmed to
-- minid, and returns the id it got: the id after prev, the one this script
-- added before it, or for a script's first entry the one Redis picks ('*'):
-- the time on its clock, or the stream's last id's, whichever is later,
-- without a read of the last. An id's milliseconds are thus when Redis
-- committed the entry, whatever the clock of the replica that wrote it. A
-- session's log holds every event of its tasks' logs under the same ids
-- (each added here, to the session log first), so an id above its last is
-- above theirs: one event carries one id in both.
local function add_entry(key, minid, prev, ...)
  local id = '*'
  if prev then
    local ms, seq = string.match(prev, '^(%d+)-(%d+)$')
    id = format_id(ms, tonumber(seq) + 1)
  end
  return redis.call('XADD', key, 'MINID', '~', minid, id, ...)
end

-- append_event appends event ev, cut at cut, to the session log slog as
-- add_entry does, and returns its id. A task event comes as its parts
-- (cut: EVENT_FORM.parts), which Go took apart (store.eventParts), and is
-- kept as it comes; any other event that carries a snapshot comes as JSON
-- cut at cut and is kept so.
local function append_event(slog, minid, prev, ev, cut)
  if cut == '' then return add_entry(slog, minid, prev, 'e', ev) end
  if cut == EVENT_FORM.parts then return add_entry(slog, minid, prev, EVENT_FIELD.parts, ev) end
  return add_entry(slog, minid, prev, 'e', ev, EVENT_FIELD.cut, cut)
end

-- entry_event is the event of a log entry (f: its fields and values, as
-- XRANGE answers them) as append_event was given it: its JSON, cut or
-- whole, and where it was cut ('' when not).
local function entry_event(f)
  if f[1] == 'e' then return f[2], f[4] or '' end
  return parts_event(f[2])
end

-- event_type reads an event's type from its JSON as events.Event encodes it
-- (the type is the first field, and a stored event has no id yet), or from
-- the parts of a task event given as the session log keeps them (the type
-- is the first), without decoding the whole event.
local function event_type(ev)
  return string.match(ev, '^{"type":"([%w%._]+)"') or string.match(ev, '^([%w%._]+)' .. EVENT_PART.sep)
end

-- Notification endpoints live in the record of the session or task they
-- belong to, and expire with it: field RECORD_FIELD.endpoints is the JSON
-- array of their views (as the API shows them, never the secret), field
-- RECORD_FIELD.secret .. endpointId each one's signing secret, sealed by the
-- service before it gets here (reseal seals one stored in clear by an
-- earlier version).
--
-- endpoints_of decodes the lists given, each {scope, endpoints field or false}
-- (scope: OUTBOX_SCOPE.task or .session, whose hash the list came from),
-- into one list of the active endpoints, each marked with its scope.
local function endpoints_of(lists)
  local eps = {}
  for _, l in ipairs(lists) do
    if l[2] and l[2] ~= '' then
      for _, ep in ipairs(cjson.decode(l[2])) do
        if ep.status == ENDPOINT_STATUS.active then
          ep.scope = l[1]
          eps[#eps + 1] = ep
        end
      end
    end
  end
  return eps
end

-- endpoint_fields adds a record's endpoint list and the secrets of the new
-- endpoints (pairs: endpoint id, secret, ...) to kv, for rec_set or
-- rec_create; save_endpoints writes them.
local function endpoint_fields(kv, list, pairs_)
  if list == '' then return kv end
  kv[#kv + 1] = RECORD_FIELD.endpoints
  kv[#kv + 1] = list
  for i = 1, #pairs_, 2 do
    kv[#kv + 1] = RECORD_FIELD.secret .. pairs_[i]
    kv[#kv + 1] = pairs_[i + 1]
  end
  return kv
end

local function save_endpoints(rec, list, pairs_)
  if list ~= '' then rec_set(rec, endpoint_fields({}, list, pairs_)) end
end

-- reseal replaces a secret kept in a record's field by the same secret sealed
-- again (the service decided it should be: authz.Vault.OpenKept), only
-- while the field still holds what the service read: a hash that is gone is
-- not brought back, and a field changed since is left alone. It reports
-- whether it wrote.
local function reseal(key, field, read, sealed)
  if rec_get(key, field)[1] ~= read then return false end
  rec_set(key, {field, sealed})
  return true
end

-- route enqueues one outbox entry per endpoint in eps that takes the event's
-- type, in the same script as the change the event reports: the outbox
-- never misses a committed event and never holds one that was not
-- committed. The entry carries the type matched here, so no reader parses
-- the event for it. The dispatcher (callbacks.Dispatcher) reads the
-- partition's outbox through a consumer group.
local function route(outbox, eps, session, task, eid, ev)
  if #eps == 0 then return end
  local typ = event_type(ev)
  for _, ep in ipairs(eps) do
    for _, kind in ipairs(ep.kinds) do
      if kind == typ then
        redis.call('XADD', outbox, '*', OUTBOX_FIELD.endpoint, ep.endpointId,
          OUTBOX_FIELD.scope, ep.scope, OUTBOX_FIELD.session, session, OUTBOX_FIELD.task, task,
          OUTBOX_FIELD.event_id, eid, OUTBOX_FIELD.type, typ, OUTBOX_FIELD.event, ev, OUTBOX_FIELD.attempt, 1)
        break
      end
    end
  end
end

-- extend_to makes each key live at least until at_ms (a key with no expiry
-- yet, such as a new index, gets it).
local function extend_to(at_ms, keys)
  for _, key in ipairs(keys) do
    local cur = redis.call('PEXPIRETIME', key)
    if cur == -1 or (cur >= 0 and cur < tonumber(at_ms)) then
      redis.call('PEXPIREAT', key, at_ms)
    end
  end
end

-- A key is kept KEPT_SLACK_MS or more past the end of the last task that
-- extended it, so that the tasks that end within that time extend it no
-- further and pay no look at its expiry.
local KEPT_SLACK_MS = 3600000

-- An index of tasks that a script can take tasks out of (a status's, a
-- kind's, an executor's, a session's live tasks) keeps the time it lives
-- until in itself: member INDEX_MEMBER.kept, scored minus that time. Tasks are
-- scored by creation time or expiry, both above 0, so a read of the tasks
-- (scores from 0 up) never meets it, and no script takes it out, so the
-- index is never emptied (and deleted, to come back with no expiry).
-- index_add adds task id at score and the mark in one ZADD: LT moves the
-- mark only to a later time, and CH counts it when it moved (or was
-- added, to a new index, or one kept before the mark existed). Only then
-- is the index's expiry looked at and extended: once per KEPT_SLACK_MS of
-- its tasks' ends, not on every write. The time is rounded up to a whole
-- KEPT_SLACK_MS, so tasks that end within one such span move it once. The
-- task is new to the index (a create, or a move to a status it was not in),
-- so CH counts it too. With no expire_at (0 or less: a task written before
-- the caller could know it), the task is added alone.
local function index_add(key, score, id, expire_at)
  if tonumber(expire_at) <= 0 then
    redis.call('ZADD', key, score, id)
    return
  end
  local until_ms = (math.floor(tonumber(expire_at) / KEPT_SLACK_MS) + 2) * KEPT_SLACK_MS
  local changed = redis.call('ZADD', key, 'LT', 'CH', score, id, string.format('-%d', until_ms), INDEX_MEMBER.kept)
  if changed > 1 then extend_to(until_ms, {key}) end
end

-- move_status moves a task from its owner's and its session's index of its
-- old status to those of its new one, scored as it was there, by its
-- creation time, and keeps the new indexes past expire_at (when above 0).
-- The score is read from the owner's old index, which holds the one fact:
-- the task record keeps no creation time of its own. It answers that score,
-- or nil for a task in no such index (written before the indexes existed),
-- which moves nowhere.
local function move_status(id, expire_at, owner_old, owner_new, ses_old, ses_new)
  local created = redis.call('ZSCORE', owner_old, id)
  if not created then return nil end
  redis.call('ZREM', owner_old, id)
  redis.call('ZREM', ses_old, id)
  index_add(owner_new, created, id, expire_at)
  index_add(ses_new, created, id, expire_at)
  return created
end

-- move_executor_status moves a task between its executor's status indexes
-- as move_status does between its owner's (created: what move_status
-- answered), when the task has an executor field (executor: its value, nil
-- when the owner executes the task, which has no executor indexes of its
-- own).
local function move_executor_status(id, executor, created, expire_at, old, new)
  if not created or not executor then return end
  redis.call('ZREM', old, id)
  index_add(new, created, id, expire_at)
end

-- A task record written by an earlier version kept its creation time in a
-- field, LEGACY_CREATED, which nothing reads any more: a script that writes
-- such a hash reads the field with the rest, to know, and drop_legacy adds
-- its removal to the fields it writes (created: the value read).
local LEGACY_CREATED = 'created'

local function drop_legacy(fields, created)
  if created then
    fields[#fields + 1] = LEGACY_CREATED
    fields[#fields + 1] = false
  end
end

-- wake appends a hint to the partition's wake stream: every replica's fan-in
-- reader wakes its local waiters on the task and session. It is capped by
-- length because it is a hint only; a reader that falls behind re-checks.
-- kind is one of WAKE_KIND (store.WakeKind); events are the event json the
-- change appended (to any log), whose types the hint names, so that a
-- waiter that wants other types can leave it aside without reading. When
-- events is nil, or a type cannot be read, the hint names none (unknown:
-- waiters read the log). A hint carries no record: a replica with a
-- waiter on it reads what the waiter needs, one with none reads nothing.
local function wake(key, kind, id, session, rev, events)
  local fields = {WAKE_FIELD.kind, kind, WAKE_FIELD.id, id, WAKE_FIELD.session, session,
    WAKE_FIELD.revision, rev}
  local types = events and {}
  for _, ev in ipairs(events or {}) do
    local t = event_type(ev)
    if not t then
      types = nil
      break
    end
    types[#types + 1] = t
  end
  if types then
    fields[#fields + 1] = WAKE_FIELD.types
    fields[#fields + 1] = table.concat(types, ',')
  end
  -- The stream lives a day past its last hint. Its expiry is set by the
  -- first hint of each millisecond (sequence 0 in the id Redis gives it,
  -- which a new stream always gets): the others in that millisecond would
  -- set it to the same day within a millisecond.
  local hint = redis.call('XADD', key, 'MAXLEN', '~', 1000, '*', unpack(fields))
  if string.sub(hint, -2) == '-0' then
    redis.call('PEXPIRE', key, 86400000)
  end
end

-- hook_closed_reason decides whether a hook takes posts: the one place this
-- is decided, for every script that asks (hook_ingest, hook_read,
-- hook_status). It answers nil when the hook does, else why not: one of
-- CLOSED (closed, expired, task_terminal, session_cancelled). status and exp
-- are the hook hash's fields; task is the task record's key, or nil for a hook
-- of the session only; session is the session hash's key. It only reads.
-- also names a field of the task and session hashes to read with their
-- status (nil for none): when the hook is open, it answers that field's
-- value in each as its second and third values, so a caller that needs it
-- pays no read of its own.
-- hook_own_closed_reason is its first part, what the hook's own fields
-- decide: enough to say a hook is closed, never that it is open.
local function hook_own_closed_reason(status, exp, now)
  if status ~= HOOK_STATUS.open then return CLOSED.explicitly end
  if now >= tonumber(exp) then return CLOSED.expired end
  return nil
end

local function hook_closed_reason(status, exp, now, task, session, also)
  local own = hook_own_closed_reason(status, exp, now)
  if own then return own end
  local function read(key)
    return unpack(rec_front(key, 'status', also or 'status'))
  end
  local task_also
  if task then
    local st, v = read(task)
    if not st or terminal[st] then return CLOSED.task_terminal end
    task_also = v
  end
  local ses, ses_also = read(session)
  if not ses then return CLOSED.expired end
  if ses ~= SESSION_STATUS.active then return CLOSED.session_cancelled end
  return nil, task_also, ses_also
end
