-- Generated from lua-src/startSchedulerJob-14.lua by `npm run build:lua`: edit the source, not this file.
--[[
  startSchedulerJob-14 · the step between a worker's pickup of a job scheduler's job and its
  handler: decide whether the job runs, and move the scheduler on to its next two slots.

  KEYS[1..10] as upsertJobScheduler-10 (schedulerKeys)  [11] active  [12] stalled
      [13] the job's hash  [14] the job's lock
  ARGV[1] job-key prefix "P:{Q}:"  [2] scheduler id  [3] the job's slot (ms: the job is
      repeat:<id>:<slot>)  [4] the worker's lock token  [5] the first slot after max(now, the
      job's slot) ("" = none)  [6] the slot after that ("" = none)  [7] now (ms)
      [8] events max length
      (ARGV[5] and [6] are computed by the runtime from the job's rpt: Lua cannot read cron)
  Returns 1: run the handler (the job is claimed: field rcl). 0: the job was skipped and removed
      (event removed, reason "superseded"): another job stands for its slot. -1 (no job), -2 (no
      lock), -6 (another token): nothing changed, and the worker does not run it.
  The scheduler holds the jobs of its next two slots, next and after. A job:
  - already claimed (a retry, or taken again after a stall) runs; the scheduler does not move;
  - marked rsk (an earlier job ran for its slot too) is skipped;
  - of a scheduler that was removed, has ended, or was replaced since the job was made
    (rgn ~= gen), runs;
  - of slot next runs, and the scheduler moves to ARGV[5], [6]. When after's slot has come too
    (slots were missed while no worker ran, or the job waited long behind others), after's job is
    marked rsk: missed slots give one job. Unless this job was taken before (ats > 1: its worker
    died before this step, so its slot was not missed): then after stays next, and both run;
  - of slot after (next's job was taken by a worker that died before its step, or is in its step
    now): runs, and the scheduler moves to ARGV[5], [6];
  - of an older slot (a later one ran): runs if it was taken before (ats > 1), else is skipped.
  So a slot's handler starts at most once whatever the order of steps, a job picked up is never
  skipped for being late (a backlog gives late runs, not none), missed slots give one job, and a
  worker killed between its pickup and this step delays no slot: after's job fires on time.
  Each claim raises the scheduler's last (the latest slot that ran); no chain slot is ever at or
  before it (setSchedulerChain), whatever clock computed the slots.
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
local jobKey, lockKey = KEYS[13], KEYS[14]
local prefix, schedulerId, slot, first, second, now, maxEvents = ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if rcall("EXISTS", jobKey) == 0 then return -1 end
local holder = rcall("GET", lockKey)
if not holder then return -2 end
if holder ~= ARGV[4] then return -6 end

local job = rcall("HMGET", jobKey, "rcl", "ats", "rgn", "rsk")
if job[1] then return 1 end
local at = tonumber(slot)
local scheduler = rcall("HMGET", keys.scheduler, "gen", "next", "after", "ended", "last")
local current = scheduler[1] and scheduler[1] == job[3] and not scheduler[4]

local function claim()
  rcall("HSET", jobKey, "rcl", "1")
  if current and at > tonumber(scheduler[5] or "-1") then rcall("HSET", keys.scheduler, "last", slot) end
  return 1
end
local function skip()
  local jobId = "repeat:" .. schedulerId .. ":" .. slot
  rcall("LREM", KEYS[11], "1", jobId)
  rcall("SREM", KEYS[12], jobId)
  removeJobKeys(jobKey)
  if scheduler[1] then rcall("HINCRBY", keys.scheduler, "ic", "-1") end -- any generation's job counted in ic
  emitEvent(keys.events, maxEvents, "removed", jobId, "reason", "superseded")
  return 0
end

if job[4] then return skip() end
if not current then return claim() end
local takenBefore = tonumber(job[2] or "0") > 1
local nextSlot, afterSlot = scheduler[2], scheduler[3] or ""
if at == tonumber(nextSlot) then
  claim()
  if afterSlot ~= "" and tonumber(afterSlot) <= tonumber(now) then
    if takenBefore then
      setSchedulerChain(keys, prefix, schedulerId, afterSlot, first, now, maxEvents)
      return 1
    end
    local afterKey = prefix .. "repeat:" .. schedulerId .. ":" .. afterSlot
    if rcall("EXISTS", afterKey) == 1 and rcall("HEXISTS", afterKey, "rcl") == 0 then
      rcall("HSET", afterKey, "rsk", "1")
    end
  end
  setSchedulerChain(keys, prefix, schedulerId, first, second, now, maxEvents)
  return 1
end
if afterSlot ~= "" and at == tonumber(afterSlot) then
  claim()
  setSchedulerChain(keys, prefix, schedulerId, first, second, now, maxEvents)
  return 1
end
if takenBefore then return claim() end
return skip()
