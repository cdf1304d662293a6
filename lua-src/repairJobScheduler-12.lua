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
-- @include schedulerKeys
-- @include addSchedulerJob

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
