-- Generated from lua-src/promote-9.lua by `npm run build:lua`: edit the source, not this file.
--[[
  promote-9 · job.promote(): a delayed job becomes ready now.

  KEYS[1] delayed  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker  [8] events
      [9] the job's hash
  ARGV[1] jobId  [2] events max length
  Returns 1; -1 when the job does not exist, -3 when it is not delayed (nothing written).
  Placed as a pickup places a due delayed job (pushReady with its stored priority, FIFO; the
  marker unless the queue is paused), and its `delay` field set to 0.
  Event: waiting (prev: delayed).
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

local jobId, jobKey = ARGV[1], KEYS[9]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("ZREM", KEYS[1], jobId) == 0 then return -3 end
rcall("HSET", jobKey, "delay", "0")
local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5],
  pc = KEYS[6], marker = KEYS[7] }
pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false)
emitEvent(KEYS[8], ARGV[2], "waiting", jobId, "prev", "delayed")
return 1
