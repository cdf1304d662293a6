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
-- @include schedulerKeys
-- @include emitEvent
-- @include removeJobKeys
-- @include addSchedulerJob

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
