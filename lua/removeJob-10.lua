-- Generated from lua-src/removeJob-10.lua by `npm run build:lua`: edit the source, not this file.
--[[
  removeJob-10 · remove one job from whatever state it is in, unless a worker holds its lock.

  KEYS[1] wait  [2] paused  [3] active  [4] prioritized  [5] delayed  [6] completed  [7] failed
      [8] stalled  [9] events  [10] the job's hash
  ARGV[1] jobId  [2] events max length
  Returns 1 when removed, 0 when the job is locked by a running worker (nothing changed),
      -1 when the job does not exist.
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

local jobId, jobKey = ARGV[1], KEYS[10]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("EXISTS", jobKey .. ":lock") == 1 then return 0 end
for i = 1, 3 do rcall("LREM", KEYS[i], "0", jobId) end
for i = 4, 7 do rcall("ZREM", KEYS[i], jobId) end
rcall("SREM", KEYS[8], jobId)
removeJobKeys(jobKey)
emitEvent(KEYS[9], ARGV[2], "removed", jobId)
return 1
