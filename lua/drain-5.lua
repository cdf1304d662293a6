-- Generated from lua-src/drain-5.lua by `npm run build:lua`: edit the source, not this file.
--[[
  drain-5 · queue.drain(): remove every job that is waiting (wait, paused, prioritized) and, when
  asked, every delayed one. Active, completed and failed jobs stay.

  KEYS[1] wait  [2] paused  [3] prioritized  [4] delayed  [5] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] "1" to drain delayed jobs too  [3] events max length
  Removes at most 1000 jobs a call, so one call stays short (a script runs alone in Redis: 5000
  took about 11 ms, 1000 take about 2); returns how many are left to remove (Queue.drain calls
  again while it is > 0).
]]
local rcall = redis.call
-- [lua-src/includes/emitEvent.lua]
-- emitEvent(eventsKey, maxEvents, name, jobId, ...extra field/value pairs)
-- Every lifecycle event is one XADD trimmed to about maxEvents entries, so the stream stays bounded.
-- maxEvents is the ARGV string as the runtime sent it: a Lua number given to redis.call is
-- formatted with %.17g on every call, which costs more than many commands (see docs/protocol.md).
-- A batch script passes false and trims once at its end (trimEvents): the stream is over its
-- bound by at most that call's events, for the length of the call.
local function emitEvent(eventsKey, maxEvents, name, jobId, ...)
  if maxEvents then
    rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", name, "jobId", jobId, ...)
  else
    rcall("XADD", eventsKey, "*", "event", name, "jobId", jobId, ...)
  end
end

-- trimEvents(eventsKey, maxEvents): the one trim of a batch script's untrimmed events.
local function trimEvents(eventsKey, maxEvents)
  rcall("XTRIM", eventsKey, "MAXLEN", "~", maxEvents)
end
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
end

local prefix, budget = ARGV[1], 1000
local function drainKey(key, isList)
  if budget <= 0 then return end
  local ids = isList and rcall("LRANGE", key, -budget, -1) or rcall("ZRANGE", key, 0, budget - 1)
  if #ids == 0 then return end
  for _, jobId in ipairs(ids) do removeJobKeys(prefix .. jobId) end
  if isList then rcall("LTRIM", key, 0, -(#ids + 1)) else rcall("ZREMRANGEBYRANK", key, 0, #ids - 1) end
  budget = budget - #ids
end
drainKey(KEYS[1], true)
drainKey(KEYS[2], true)
drainKey(KEYS[3], false)
local withDelayed = ARGV[2] == "1"
if withDelayed then drainKey(KEYS[4], false) end
local left = rcall("LLEN", KEYS[1]) + rcall("LLEN", KEYS[2]) + rcall("ZCARD", KEYS[3])
if withDelayed then left = left + rcall("ZCARD", KEYS[4]) end
if left == 0 then emitEvent(KEYS[5], ARGV[3], "drained", "") end
return left
