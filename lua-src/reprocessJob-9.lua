--[[
  reprocessJob-9 · job.retry(): send a finished job (failed or completed) back to ready.

  KEYS[1] the job's hash  [2] the finished set it is in (failed or completed)  [3] wait
      [4] paused  [5] meta  [6] prioritized  [7] pc  [8] marker  [9] events
  ARGV[1] jobId  [2] events max length
  Returns 1, -1 when the job does not exist, -3 when it is not in that finished set.
  attemptsMade and stalledCounter start again from 0; ats (attempts started, the fencing number)
  keeps counting so it never repeats for the job. A cancel's mark (`cxl`, cancelJob-12) and a step
  parent's mark of a child that failed it (`cfr`, settleChildren-12) are removed with finishedOn,
  failedReason, stacktrace and returnvalue: a job retried is no longer cancelled, and a parent
  retried runs its handler again (its failed child, retried too, tells it again if it fails again).
]]
local rcall = redis.call
-- @include emitEvent
-- @include pushReady

local jobId, jobKey = ARGV[1], KEYS[1]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if rcall("ZREM", KEYS[2], jobId) == 0 then return -3 end
rcall("HDEL", jobKey, "finishedOn", "processedOn", "failedReason", "stacktrace", "returnvalue", "cxl", "cfr")
rcall("HSET", jobKey, "atm", "0", "stc", "0")
local keys = { wait = KEYS[3], paused = KEYS[4], meta = KEYS[5], prioritized = KEYS[6],
  pc = KEYS[7], marker = KEYS[8] }
pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false)
emitEvent(KEYS[9], ARGV[2], "waiting", jobId, "prev", "retried")
return 1
