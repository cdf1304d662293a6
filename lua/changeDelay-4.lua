-- Generated from lua-src/changeDelay-4.lua by `npm run build:lua`: edit the source, not this file.
--[[
  changeDelay-4 · job.changeDelay(): a delayed job becomes due `delay` ms from now.

  KEYS[1] delayed  [2] marker  [3] events  [4] the job's hash
  ARGV[1] jobId  [2] now (ms)  [3] delay ms (>= 0)  [4] events max length
  Returns 1; -1 when the job does not exist, -3 when it is not delayed (nothing written).
  The job's score in delayed becomes now + delay and its `delay` field the delay given (its due
  time is the score; `timestamp` stays the add's). The marker gets "1" at the new due time, so a
  worker blocked until the old one wakes and reads the next due time again, earlier or later.
  Event: delayed (delay: the new due time).
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

local jobId, jobKey = ARGV[1], KEYS[4]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if not rcall("ZSCORE", KEYS[1], jobId) then return -3 end
local dueAt = tostring(tonumber(ARGV[2]) + tonumber(ARGV[3])) -- arithmetic: formatted once for its three writes
rcall("ZADD", KEYS[1], dueAt, jobId)
rcall("HSET", jobKey, "delay", ARGV[3])
rcall("ZADD", KEYS[2], dueAt, "1")
emitEvent(KEYS[3], ARGV[4], "delayed", jobId, "delay", dueAt)
return 1
