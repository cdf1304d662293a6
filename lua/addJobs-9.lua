-- Generated from lua-src/addJobs-9.lua by `npm run build:lua`: edit the source, not this file.
--[[
  addJobs-9 · add many jobs in one call (Queue.addBulk, and concurrent Queue.add calls gathered
  in one turn of the event loop): each exactly as addJob-9 would, with the paused check and the
  wake-up marker done once for the whole batch. Each job carries its own timestamp, so a delayed
  job is due exactly `delay` ms after its own add, wherever it stands in the batch.

  KEYS[1] wait  [2] paused  [3] meta  [4] id  [5] delayed  [6] prioritized  [7] pc  [8] marker
      [9] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] events max length
      [3] optional: the automatic id prefix, "<i>-" for partition i of a partitioned queue; a call
      has it when #ARGV mod 8 is 3 (a plain queue's call leaves it out: #ARGV mod 8 is 2)
      then 8 fields a job: custom id or "", name, data (JSON), opts (JSON), timestamp (ms),
      delay ms, priority, "1" for LIFO
  Returns a flat array, jobId, created, jobId, created, ... in the order given: created is 1 when
      added, 0 when a job with that custom id already existed (that job is left as it was).
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
-- [lua-src/includes/addOneJob.lua]
-- addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix): the body of addJob-9 and addJobs-9.
-- keys: { wait, paused, meta, id, delayed, prioritized, pc, marker, events }.
-- job: { id = custom id or "", name, data, opts, delay, priority, lifo }: delay and priority are the
-- ARGV strings, written as they are (as is now, a string); they are compared as numbers.
-- idPrefix: put before an automatic id ("" for a plain queue; "3-" in partition 3 of a
-- partitioned queue, so its ids read 3-1, 3-2, ... and name their partition).
-- Returns jobId, created, ready: created is false when a job with that custom id exists (then
-- nothing at all is written); ready is true when the job went to wait or prioritized, so the
-- caller owes the wake-up marker (set once per call, however many jobs it added).
local function addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  local jobId = job.id
  if jobId == "" then
    jobId = idPrefix .. rcall("INCR", keys.id)
  elseif rcall("EXISTS", prefix .. jobId) == 1 then
    return jobId, false, false
  end
  rcall("HSET", prefix .. jobId, "name", job.name, "data", job.data, "opts", job.opts,
    "timestamp", now, "delay", job.delay, "priority", job.priority)
  local delay = tonumber(job.delay)
  if delay > 0 then
    local dueAt = tonumber(now) + delay
    rcall("ZADD", keys.delayed, dueAt, jobId)
    -- Wake one blocked worker so it shortens its block to this job's due time.
    rcall("ZADD", keys.marker, dueAt, "1")
    emitEvent(keys.events, maxEvents, "delayed", jobId, "delay", dueAt)
    return jobId, true, false
  end
  placeReady(keys, jobId, tonumber(job.priority), job.lifo, paused)
  emitEvent(keys.events, maxEvents, "waiting", jobId)
  return jobId, true, true
end

local keys = { wait = KEYS[1], paused = KEYS[2], meta = KEYS[3], id = KEYS[4], delayed = KEYS[5],
  prioritized = KEYS[6], pc = KEYS[7], marker = KEYS[8], events = KEYS[9] }
local prefix, maxEvents, idPrefix, first = ARGV[1], ARGV[2], "", 3
if #ARGV % 8 == 3 then idPrefix, first = ARGV[3], 4 end
local paused = rcall("HEXISTS", keys.meta, "paused") == 1
local results, anyReady = {}, false
for i = first, #ARGV, 8 do
  local job = { id = ARGV[i], name = ARGV[i + 1], data = ARGV[i + 2], opts = ARGV[i + 3],
    delay = ARGV[i + 5], priority = ARGV[i + 6], lifo = ARGV[i + 7] == "1" }
  local jobId, created, ready = addOneJob(keys, prefix, job, ARGV[i + 4], maxEvents, paused, idPrefix)
  results[#results + 1] = jobId
  results[#results + 1] = created and 1 or 0
  anyReady = anyReady or ready
end
if anyReady and not paused then rcall("ZADD", keys.marker, "0", "0") end
return results
