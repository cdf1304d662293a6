-- Generated from lua-src/retryJobs-8.lua by `npm run build:lua`: edit the source, not this file.
--[[
  retryJobs-8 · one batch of queue.retryJobs(): the finished jobs (failed or completed) that
  finished at or before a cut-off go back to ready, each as job.retry() (reprocessJob-9) sends one.

  KEYS[1] the finished set (failed or completed)  [2] wait  [3] paused  [4] meta  [5] prioritized
      [6] pc  [7] marker  [8] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] count: at most this many ids a call  [3] the cut-off (ms:
      the set's score, finishedOn, at or before it)  [4] events max length
  Returns how many ids it took out of the set (those finished first); fewer than count means none
  was left at or before the cut-off. queue.retryJobs calls again while a call took count.
  Each job: finishedOn, processedOn, failedReason, stacktrace, returnvalue, a cancel's mark
  (`cxl`, cancelJob-12) and a step parent's mark of a failed child (`cfr`) removed, atm and stc
  set to 0, ats kept (the fencing number never repeats); placed with its stored priority, FIFO
  (placeReady), in paused while the queue is paused; event waiting (prev: retried, as job.retry()).
  The marker once, when a job became ready and the queue is not paused. An id without a hash is
  only taken out of the set.
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
-- [lua-src/includes/readyAgain.lua]
-- readyAgain(prefix, ids, prev, maxEvents, prepare): the batch scripts' shared end (retryJobs-8,
-- promoteJobs-8), KEYS[2..8] being wait, paused, meta, prioritized, pc, marker, events. Each id
-- whose hash exists is prepared (prepare(jobKey): the script's own field changes), placed with its
-- stored priority, FIFO (placeReady), in paused while the queue is paused, with an event waiting
-- (prev). The marker once, when a job became ready and the queue is not paused.
local function readyAgain(prefix, ids, prev, maxEvents, prepare)
  local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5],
    pc = KEYS[6], marker = KEYS[7] }
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  local placed = false
  for _, jobId in ipairs(ids) do
    local jobKey = prefix .. jobId
    if rcall("EXISTS", jobKey) == 1 then
      prepare(jobKey)
      placeReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false, paused)
      emitEvent(KEYS[8], maxEvents, "waiting", jobId, "prev", prev)
      placed = true
    end
  end
  if placed and not paused then rcall("ZADD", keys.marker, "0", "0") end
end

local prefix, maxEvents = ARGV[1], ARGV[4]
local ids = rcall("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[3], "LIMIT", "0", ARGV[2])
if #ids == 0 then return 0 end
-- The lowest scores are the lowest ranks: exactly the ids read.
rcall("ZREMRANGEBYRANK", KEYS[1], "0", tostring(#ids - 1))
readyAgain(prefix, ids, "retried", maxEvents, function(jobKey)
  rcall("HDEL", jobKey, "finishedOn", "processedOn", "failedReason", "stacktrace", "returnvalue", "cxl", "cfr")
  rcall("HSET", jobKey, "atm", "0", "stc", "0")
end)
return #ids
