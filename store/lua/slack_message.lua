-- slack_message: records the Slack message that shows a task to one Slack
-- endpoint (its channel, ts and the revision it shows), kept in the task's
-- hash so it expires with the task. A task that is gone is not brought back,
-- and a record of an older revision never replaces a newer one.
-- KEYS[1] task record
-- ARGV[1] endpoint id   ARGV[2] the record (json: channel, ts, revision)
-- ARGV[3] its revision
-- Returns {'ok'} | {'gone'} | {'stale'}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
local field = 'slk:' .. ARGV[1]
local cur = rec_get(KEYS[1], field)[1]
if cur and tonumber(cjson.decode(cur).revision) >= tonumber(ARGV[3]) then return {'stale'} end
rec_set(KEYS[1], {field, ARGV[2]})
return {'ok'}
