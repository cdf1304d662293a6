--[[
  moveToDelayed-7 · job.moveToDelayed(): the handler of an active job sends it to delayed until a
  given time (a job run in steps) and gives up its lock. The attempt is not counted: `atm` is
  unchanged, as in BullMQ (a job of many steps does not use up its attempts); `ats`, the fencing
  number, grows at its next pickup as at every pickup.

  KEYS[1] active  [2] delayed  [3] stalled  [4] marker  [5] events  [6] the job's hash
      [7] the job's lock
  ARGV[1] jobId  [2] token  [3] now (ms)  [4] the due time (ms; one at or before now is now: the
      job is due at once and the next pickup promotes it)  [5] events max length
  Returns 1; -1 when the job does not exist, -2 when it has no lock, -6 when another token holds
  it, -3 when it is not in active: then nothing changed.
  The checks are those of releaseFromActive (retryJob-12, moveToFinished-14), in its order, before
  any write; the release is its too (the lock DELeted, the id SREMed from stalled) but for the
  attempt count: releaseUncounted, shared with moveJobFromActiveToWait-11 (releaseFromActive is part
  of the fixed moveToFinished-14 and cannot take a flag).
  The job's score in delayed is the due time and its `delay` field the due time less now. The
  marker gets "1" at the due time, so a blocked worker shortens its block to it.
  Event: delayed (delay: the due time).
]]
local rcall = redis.call
-- @include emitEvent
-- @include releaseUncounted

local jobId, token, jobKey, lockKey = ARGV[1], ARGV[2], KEYS[6], KEYS[7]
local code = releaseUncounted(jobKey, lockKey, KEYS[1], KEYS[3], jobId, token)
if code ~= 0 then return code end
local now, dueAt = ARGV[3], ARGV[4]
local delay = tonumber(dueAt) - tonumber(now)
if delay < 0 then
  dueAt, delay = now, 0
end
rcall("HSET", jobKey, "delay", tostring(delay))
rcall("ZADD", KEYS[2], dueAt, jobId)
rcall("ZADD", KEYS[4], dueAt, "1")
emitEvent(KEYS[5], ARGV[5], "delayed", jobId, "delay", dueAt)
return 1
