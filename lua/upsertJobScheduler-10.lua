-- Generated from lua-src/upsertJobScheduler-10.lua by `npm run build:lua`: edit the source, not this file.
--[[
  upsertJobScheduler-10 · create or replace a job scheduler, and the jobs of its first two slots.

  KEYS[1] repeat (zset: scheduler id -> its next slot)  [2] the scheduler P:{Q}:repeat:<id>
      [3] wait  [4] paused  [5] meta  [6] delayed  [7] prioritized  [8] pc  [9] marker  [10] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] scheduler id  [3] the schedule (JSON, as the runtime writes it)
      [4] job name  [5] data (JSON)  [6] job opts (JSON)  [7] priority (0 = none)  [8] "1" for LIFO
      [9] limit (0 = none)  [10] the first slot (ms; "" = none: the schedule has ended)
      [11] the slot after it ("" = none)  [12] now (ms)  [13] events max length
  Returns { the scheduler's next slot, or "" when it has none (ended), 1 changed / 0 unchanged }.
  The same arguments as stored (schedule, template and limit) change nothing, an ended scheduler
  included: upserts from many instances at every boot make one scheduler and one job per slot, and
  a limit is not counted again. Different ones replace the scheduler: it takes a new generation
  (gen, from the queue-wide counter sgen in meta, so an id removed and made again never reuses
  one); its jobs that wait for a slot still to come are removed (and no longer counted in ic); of
  its two jobs that are due and not started, only the earlier runs (the later is marked rsk, so its
  step skips it: missed slots give one job, across a change too); a job already running finishes.
  Then the chain starts from the given slots. ic (jobs made) and last (the latest slot that ran)
  are kept.
  A scheduler keeps the jobs of its next two slots (fields next and after), so that a worker that
  dies after taking the first one's job leaves the second to fire on time (startSchedulerJob-14).
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
-- [lua-src/includes/removeJobKeys.lua]
-- removeJobKeys(jobKey): delete a job's hash with its logs and lock (all in the job's slot).
local function removeJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":lock")
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
local prefix, schedulerId, now, maxEvents = ARGV[1], ARGV[2], ARGV[12], ARGV[13]
local fields = { "repeat", ARGV[3], "name", ARGV[4], "data", ARGV[5], "opts", ARGV[6], "priority", ARGV[7],
  "lifo", ARGV[8], "limit", ARGV[9] }
local current = rcall("HMGET", keys.scheduler, "repeat", "name", "data", "opts", "priority", "lifo", "limit", "next", "after")
local same = current[8] ~= false
for i = 1, 7 do
  if current[i] ~= fields[2 * i] then same = false end
end
if same then return { current[8], 0 } end

-- The old chain: a job whose slot is still to come goes; of two due and unstarted, the later is skipped.
local dueUnstarted = 0
for _, slot in ipairs({ current[8] or "", current[9] or "" }) do
  if slot ~= "" then
    local oldId = "repeat:" .. schedulerId .. ":" .. slot
    local oldKey = prefix .. oldId
    if tonumber(slot) > tonumber(now) and rcall("ZREM", keys.delayed, oldId) == 1 then
      removeJobKeys(oldKey)
      rcall("HINCRBY", keys.scheduler, "ic", "-1")
      emitEvent(keys.events, maxEvents, "removed", oldId, "reason", "replaced by upsertJobScheduler")
    elseif rcall("EXISTS", oldKey) == 1 and rcall("HEXISTS", oldKey, "rcl") == 0 then
      dueUnstarted = dueUnstarted + 1
      if dueUnstarted == 2 then rcall("HSET", oldKey, "rsk", "1") end
    end
  end
end
rcall("HSET", keys.scheduler, unpack(fields))
rcall("HSET", keys.scheduler, "gen", rcall("HINCRBY", keys.meta, "sgen", "1"))
return { setSchedulerChain(keys, prefix, schedulerId, ARGV[10], ARGV[11], now, maxEvents), 1 }
