-- Generated from lua-src/repairJobScheduler-12.lua by `npm run build:lua`: edit the source, not this file.
--[[
  repairJobScheduler-12 · restart a job scheduler whose next two jobs are both gone or finished
  without having run as its slots (removed by a user, drained, failed by stalling before their
  step): its chain starts again from the given slots.

  KEYS[1..10] as upsertJobScheduler-10 (schedulerKeys)  [11] completed  [12] failed
  ARGV[1] job-key prefix "P:{Q}:"  [2] scheduler id  [3] the generation the slots were computed
      for  [4] the first slot after now  [5] the slot after that ("" = none)  [6] now (ms)
      [7] events max length
  Returns 1 restarted (or ended, when its limit leaves no slot), 0 nothing changed: the scheduler
      is gone, ended or replaced (gen), or one of its next two jobs is still waiting, delayed or running.
  A worker calls it, in the rhythm of its stalled sweep, for the schedulers whose next slot is
  more than a second behind (the repeat zset, at most 100 a round).
]]
local rcall = redis.call
-- [lua-src/includes/schedulerKeys.lua]
-- schedulerKeys(): the keys table of the job scheduler scripts (upsertJobScheduler-10,
-- startSchedulerJob-14, repairJobScheduler-12), read from KEYS[1..10] in this order: [1] repeat (zset: scheduler id ->
-- the slot of its next job, ms) [2] the scheduler's hash P:{Q}:repeat:<id> [3] wait [4] paused
-- [5] meta [6] delayed [7] prioritized [8] pc [9] marker [10] events. The TypeScript side lists
-- the same order once (SCHEDULER_KEYS in lib/protocol/scheduler-scripts.ts).
local function schedulerKeys()
  return {
    schedulers = KEYS[1], scheduler = KEYS[2], wait = KEYS[3], paused = KEYS[4], meta = KEYS[5],
    delayed = KEYS[6], prioritized = KEYS[7], pc = KEYS[8], marker = KEYS[9], events = KEYS[10]
  }
end
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
-- [lua-src/includes/addSchedulerJob.lua]
-- addSchedulerJob(keys, prefix, schedulerId, slot, now, maxEvents): the job of one slot of a job
-- scheduler, built from the template in the scheduler's hash. Its id is repeat:<schedulerId>:<slot>
-- (slot in ms), so one slot can never hold two jobs: a job of that id already there is the slot's
-- job and nothing is written. The job is delayed until the slot, or ready when the slot has come.
-- Its hash carries rjk (the scheduler id), rpt (the schedule as JSON: the runtime computes the
-- following slots from it) and rgn (the scheduler's generation, which each replacing upsert sets
-- anew). Counts the job in the scheduler's ic. keys: schedulerKeys(). slot and now are ARGV
-- strings (ms). Returns true when it made the job.
local function addSchedulerJob(keys, prefix, schedulerId, slot, now, maxEvents)
  local jobId = "repeat:" .. schedulerId .. ":" .. slot
  local t = rcall("HMGET", keys.scheduler, "name", "data", "opts", "priority", "lifo", "repeat", "gen")
  local delay = tonumber(slot) - tonumber(now)
  if delay < 0 then delay = 0 end
  local paused = rcall("HEXISTS", keys.meta, "paused") == 1
  local job = { id = jobId, name = t[1], data = t[2], opts = t[3], delay = tostring(delay), priority = t[4],
    lifo = t[5] == "1" }
  local _, created, ready = addOneJob(keys, prefix, job, now, maxEvents, paused, "")
  if not created then return false end
  rcall("HSET", prefix .. jobId, "rjk", schedulerId, "rpt", t[6], "rgn", t[7])
  rcall("HINCRBY", keys.scheduler, "ic", "1")
  if ready and not paused then rcall("ZADD", keys.marker, "0", "0") end
  return true
end

-- setSchedulerChain(keys, prefix, schedulerId, first, second, now, maxEvents): point the scheduler
-- at its next two slots (ms strings; "" = none: the schedule ends before) and make the job of each
-- that has none, while the limit allows (ic < limit). A slot at or before `last` (the latest slot
-- that ran) is dropped, whatever clock computed it, and so is a slot that gets no job. With no slot
-- left the scheduler ends: it stays as a record (ended = 1, ic kept, scored +inf in the repeat
-- zset, where no read or repair sees it), so that the same upsert at the next boot does not start
-- it again. Returns the chain's first slot, or "" when the scheduler ended.
local function setSchedulerChain(keys, prefix, schedulerId, first, second, now, maxEvents)
  local state = rcall("HMGET", keys.scheduler, "limit", "last")
  local limit, last = tonumber(state[1] or "0"), tonumber(state[2] or "-1")
  local chain = {}
  for _, slot in ipairs({ first, second }) do
    if slot ~= "" and slot ~= chain[1] and tonumber(slot) > last then
      local jobId = "repeat:" .. schedulerId .. ":" .. slot
      local exists = rcall("EXISTS", prefix .. jobId) == 1
      if exists or limit == 0 or tonumber(rcall("HGET", keys.scheduler, "ic") or "0") < limit then
        if not exists then addSchedulerJob(keys, prefix, schedulerId, slot, now, maxEvents) end
        chain[#chain + 1] = slot
      end
    end
  end
  if #chain == 0 then
    rcall("HSET", keys.scheduler, "ended", "1", "next", "", "after", "")
    rcall("ZADD", keys.schedulers, "+inf", schedulerId)
    return ""
  end
  rcall("HSET", keys.scheduler, "next", chain[1], "after", chain[2] or "")
  rcall("HDEL", keys.scheduler, "ended")
  rcall("ZADD", keys.schedulers, chain[1], schedulerId)
  return chain[1]
end

local keys = schedulerKeys()
local prefix, schedulerId = ARGV[1], ARGV[2]
local scheduler = rcall("HMGET", keys.scheduler, "gen", "next", "after", "ended")
if not scheduler[1] or scheduler[1] ~= ARGV[3] or scheduler[4] then return 0 end
for _, slot in ipairs({ scheduler[2], scheduler[3] }) do
  if slot and slot ~= "" then
    local jobId = "repeat:" .. schedulerId .. ":" .. slot
    if rcall("EXISTS", prefix .. jobId) == 1 and not rcall("ZSCORE", KEYS[11], jobId)
      and not rcall("ZSCORE", KEYS[12], jobId) then
      return 0
    end
  end
end
setSchedulerChain(keys, prefix, schedulerId, ARGV[4], ARGV[5], ARGV[6], ARGV[7])
return 1
