--[[
  removeJobScheduler-7 · remove a job scheduler and its next jobs, unless they have started.

  KEYS[1] repeat  [2] the scheduler P:{Q}:repeat:<id>  [3] delayed  [4] wait  [5] paused
      [6] prioritized  [7] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] scheduler id  [3] events max length
  Returns 1 when the scheduler existed (an ended one's record included), 0 when there was none.
  The jobs of its next two slots go when they are delayed, waiting, paused or prioritized; a
  running one finishes (its startSchedulerJob-14 step finds no scheduler and lets it run),
  finished ones stay. LREM stops at the job: a long wait list costs a scan up to it.
]]
local rcall = redis.call
-- @include emitEvent
-- @include removeJobKeys

local prefix, schedulerId = ARGV[1], ARGV[2]
local slots = rcall("HMGET", KEYS[2], "next", "after")
local existed = rcall("ZREM", KEYS[1], schedulerId) + rcall("DEL", KEYS[2])
for _, slot in ipairs(slots) do
  if slot and slot ~= "" then
    local jobId = "repeat:" .. schedulerId .. ":" .. slot
    local removed = rcall("ZREM", KEYS[3], jobId) + rcall("ZREM", KEYS[6], jobId)
    if removed == 0 then removed = rcall("LREM", KEYS[4], "1", jobId) end
    if removed == 0 then removed = rcall("LREM", KEYS[5], "1", jobId) end
    if removed > 0 then
      removeJobKeys(prefix .. jobId)
      emitEvent(KEYS[7], ARGV[3], "removed", jobId, "reason", "job scheduler removed")
    end
  end
end
return existed > 0 and 1 or 0
