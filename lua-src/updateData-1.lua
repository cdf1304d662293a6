--[[
  updateData-1 · job.updateData(): replace a job's data.

  KEYS[1] the job's hash
  ARGV[1] the data (JSON)
  Returns 1, or -1 when the job does not exist (nothing written).
  Any state: a running job's handler may keep what it has done so far in its data. No event (as
  in BullMQ: the data is read from the hash, never from the stream).
]]
local rcall = redis.call

if rcall("EXISTS", KEYS[1]) == 0 then return -1 end
rcall("HSET", KEYS[1], "data", ARGV[1])
return 1
