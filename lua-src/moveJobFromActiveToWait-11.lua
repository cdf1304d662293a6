--[[
  moveJobFromActiveToWait-11 · a job its handler gave back because the queue is rate limited
  (the handler threw RateLimitError, after worker.rateLimit(ms)): verify the lock, release it, and
  put the job back where workers take ready jobs, next in line, WITHOUT counting an attempt.

  KEYS[1] active  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker
      [8] events  [9] stalled  [10] the job's hash  [11] the job's lock
  ARGV[1] jobId  [2] token  [3] events max length
  Returns 1 when moved; -1 (no job hash), -2 (no lock), -6 (another token) or -3 (not in active)
      when nothing changed: the checks of every script that takes a job out of active, in the same
      order, and the release, but `atm` is left as it is: the attempt did not happen
      (releaseUncounted, as moveToDelayed-7).
  The job goes to the right end of wait (taken next) or, with a priority, back to prioritized; to
  paused while the queue is paused. `ats`, the fencing number, keeps the pickup's increment (it
  never goes down). Event: waiting, prev active. The ready marker is set as for any job made
  ready: a worker that ignores the limit may take it at once (docs/limits.md says which).
]]
local rcall = redis.call
-- @include emitEvent
-- @include pushReady
-- @include releaseUncounted

local jobId, token, jobKey = ARGV[1], ARGV[2], KEYS[10]
local code = releaseUncounted(jobKey, KEYS[11], KEYS[1], KEYS[9], jobId, token)
if code ~= 0 then return code end
local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5], pc = KEYS[6], marker = KEYS[7] }
pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, true)
emitEvent(KEYS[8], ARGV[3], "waiting", jobId, "prev", "active")
return 1
