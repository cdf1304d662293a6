--[[
  promote-9 · job.promote(): a delayed job becomes ready now.

  KEYS[1] delayed  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker  [8] events
      [9] the job's hash
  ARGV[1] jobId  [2] events max length
  Returns 1; -1 when the job does not exist, -3 when it is not delayed (nothing written).
  Placed as a pickup places a due delayed job (pushReady with its stored priority, FIFO; the
  marker unless the queue is paused), and its `delay` field set to 0.
  Event: waiting (prev: delayed).
]]
local rcall = redis.call
-- @include emitEvent
-- @include pushReady

local jobId, jobKey = ARGV[1], KEYS[9]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("ZREM", KEYS[1], jobId) == 0 then return -3 end
rcall("HSET", jobKey, "delay", "0")
local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5],
  pc = KEYS[6], marker = KEYS[7] }
pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false)
emitEvent(KEYS[8], ARGV[2], "waiting", jobId, "prev", "delayed")
return 1
