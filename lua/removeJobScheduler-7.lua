-- Generated from lua-src/removeJobScheduler-7.lua by `npm run build:lua`: edit the source, not this file.
--[[
  removeJobScheduler-7 · remove a job scheduler and its next jobs, unless they have started.

  KEYS[1] repeat  [2] the scheduler P:{Q}:repeat:<id>  [3] delayed  [4] wait  [5] paused
      [6] prioritized  [7] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] scheduler id  [3] events max length
  Returns 1 when the scheduler existed (an ended one's record included), 0 when there was none.
  The jobs of its next two slots go when they are delayed, waiting, paused or prioritized; a
  running one finishes (its startSchedulerJob-14 step finds no scheduler and lets it run),
  finished ones stay. LREM stops at the job: a long wait list costs a scan up to it.
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

local prefix, schedulerId = ARGV[1], ARGV[2]
local slots = rcall("HMGET", KEYS[2], "next", "after")
local existed = rcall("ZREM", KEYS[1], schedulerId) + rcall("DEL", KEYS[2])
for _, slot in ipairs(slots) do
  if slot and slot ~= "" then
    local jobId = "repeat:" .. schedulerId .. ":" .. slot
    local removed = rcall("ZREM", KEYS[3], jobId) + rcall("ZREM", KEYS[6], jobId)
    if removed == 0 then removed = rcall("LREM", KEYS[4], "1", jobId) end
    if removed == 0 then removed = rcall("LREM", KEYS[5], "1", jobId) end
    if removed > 0 then
      removeJobKeys(prefix .. jobId)
      emitEvent(KEYS[7], ARGV[3], "removed", jobId, "reason", "job scheduler removed")
    end
  end
end
return existed > 0 and 1 or 0
