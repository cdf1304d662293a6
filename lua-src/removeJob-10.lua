--[[
  removeJob-10 · remove one job from whatever state it is in, unless a worker holds its lock.

  KEYS[1] wait  [2] paused  [3] active  [4] prioritized  [5] delayed  [6] completed  [7] failed
      [8] stalled  [9] events  [10] the job's hash
  ARGV[1] jobId  [2] events max length
  Returns 1 when removed, 0 when the job is locked by a running worker (nothing changed),
      -1 when the job does not exist.
]]
local rcall = redis.call
-- @include emitEvent
-- @include removeJobKeys

local jobId, jobKey = ARGV[1], KEYS[10]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("EXISTS", jobKey .. ":lock") == 1 then return 0 end
for i = 1, 3 do rcall("LREM", KEYS[i], "0", jobId) end
for i = 4, 7 do rcall("ZREM", KEYS[i], jobId) end
rcall("SREM", KEYS[8], jobId)
removeJobKeys(jobKey)
emitEvent(KEYS[9], ARGV[2], "removed", jobId)
return 1
