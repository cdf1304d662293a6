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
-- @include schedulerKeys
-- @include emitEvent
-- @include removeJobKeys
-- @include addSchedulerJob

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
