--[[
  updateProgress-2 · store a job's progress and tell the events stream.

  KEYS[1] the job's hash  [2] events
  ARGV[1] jobId  [2] progress (JSON)  [3] events max length
  Returns 1, or -1 when the job does not exist (nothing written).
]]
local rcall = redis.call
-- @include emitEvent

if rcall("EXISTS", KEYS[1]) == 0 then return -1 end
rcall("HSET", KEYS[1], "progress", ARGV[2])
emitEvent(KEYS[2], ARGV[3], "progress", ARGV[1], "data", ARGV[2])
return 1
