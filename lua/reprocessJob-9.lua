-- Generated from lua-src/reprocessJob-9.lua by `npm run build:lua`: edit the source, not this file.
--[[
  reprocessJob-9 · job.retry(): send a finished job (failed or completed) back to ready.

  KEYS[1] the job's hash  [2] the finished set it is in (failed or completed)  [3] wait
      [4] paused  [5] meta  [6] prioritized  [7] pc  [8] marker  [9] events
  ARGV[1] jobId  [2] events max length
  Returns 1, -1 when the job does not exist, -3 when it is not in that finished set.
  attemptsMade and stalledCounter start again from 0; ats (attempts started, the fencing number)
  keeps counting so it never repeats for the job. A cancel's mark (`cxl`, cancelJob-12) and a step
  parent's mark of a child that failed it (`cfr`, settleChildren-12) are removed with finishedOn,
  failedReason, stacktrace and returnvalue: a job retried is no longer cancelled, and a parent
  retried runs its handler again (its failed child, retried too, tells it again if it fails again).
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
-- [lua-src/includes/pushReady.lua]
-- placeReady(keys, jobId, priority, lifo, paused): put a job where workers take ready jobs from.
-- keys: { wait, paused, meta, prioritized, pc, marker }.
-- A priority > 0 goes to the prioritized zset, scored priority * 2^32 + a counter (pc) so jobs of one
-- priority keep FIFO order. Otherwise the wait list, or the paused list while the queue is paused;
-- workers take from the right end, so FIFO pushes left and LIFO pushes right.
local function placeReady(keys, jobId, priority, lifo, paused)
  if priority > 0 then
    local seq = rcall("INCR", keys.pc) % 4294967296
    rcall("ZADD", keys.prioritized, priority * 4294967296 + seq, jobId)
  else
    rcall(lifo and "RPUSH" or "LPUSH", paused and keys.paused or keys.wait, jobId)
  end
end

-- pushReady(keys, jobId, priority, lifo): placeReady, then wake one worker blocked on BZPOPMIN
-- with the marker; a paused queue wakes nobody.
local function pushReady(keys, jobId, priority, lifo)
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  placeReady(keys, jobId, priority, lifo, paused)
  if not paused then rcall("ZADD", keys.marker, "0", "0") end
end

local jobId, jobKey = ARGV[1], KEYS[1]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("ZREM", KEYS[2], jobId) == 0 then return -3 end
rcall("HDEL", jobKey, "finishedOn", "processedOn", "failedReason", "stacktrace", "returnvalue", "cxl", "cfr")
rcall("HSET", jobKey, "atm", "0", "stc", "0")
local keys = { wait = KEYS[3], paused = KEYS[4], meta = KEYS[5], prioritized = KEYS[6],
  pc = KEYS[7], marker = KEYS[8] }
pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false)
emitEvent(KEYS[9], ARGV[2], "waiting", jobId, "prev", "retried")
return 1
