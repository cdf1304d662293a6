-- Generated from lua-src/pause-6.lua by `npm run build:lua`: edit the source, not this file.
--[[
  pause-6 · pause or resume the queue.

  KEYS[1] wait  [2] paused  [3] meta  [4] prioritized  [5] marker  [6] events
  ARGV[1] "pause" or "resume"  [2] events max length
  Returns 1 when the state changed, 0 when the queue was already in it.
  Pausing moves the wait list to the paused list (order kept) and sets meta.paused; prioritized
  and delayed jobs stay where they are and are simply not taken while paused. Resuming moves them
  back and wakes a worker. Jobs already active run to their end.
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

local function moveAll(from, to)
  if rcall("EXISTS", to) == 0 then
    if rcall("EXISTS", from) == 1 then rcall("RENAME", from, to) end
    return
  end
  while rcall("RPOPLPUSH", from, to) do end
end

local pausing = ARGV[1] == "pause"
local isPaused = rcall("HEXISTS", KEYS[3], "paused") == 1
if pausing == isPaused then return 0 end
if pausing then
  rcall("HSET", KEYS[3], "paused", "1")
  moveAll(KEYS[1], KEYS[2])
  emitEvent(KEYS[6], ARGV[2], "paused", "")
else
  rcall("HDEL", KEYS[3], "paused")
  moveAll(KEYS[2], KEYS[1])
  rcall("ZADD", KEYS[5], "0", "0")
  emitEvent(KEYS[6], ARGV[2], "resumed", "")
end
return 1
