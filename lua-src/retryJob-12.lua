--[[
  retryJob-12 · a failed attempt that has attempts left: verify the lock, release it, and put the
  job back to ready (delay 0) or to delayed (a backoff).

  KEYS[1] active  [2] wait  [3] paused  [4] meta  [5] prioritized  [6] pc  [7] marker
      [8] delayed  [9] events  [10] stalled  [11] the job's hash  [12] the job's lock
  ARGV[1] jobId  [2] token  [3] now (ms)  [4] delay ms (0 = ready now)  [5] failedReason
      [6] stacktrace (JSON array)  [7] events max length
  Returns 1 when moved; -1, -2, -6 or -3 (not in active) when nothing changed.
]]
local rcall = redis.call
-- @include deferred
-- @include releaseFromActive
-- @include readyAfterRetry

local jobId, token, now, delay = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local jobKey = KEYS[11]
local deferred = newDeferred()
local code = releaseFromActive(jobKey, KEYS[12], KEYS[1], jobId, token, deferred)
if code ~= 0 then return code end
applyDeferred(KEYS[10], deferred)
rcall("HSET", jobKey, "failedReason", ARGV[5], "stacktrace", ARGV[6])
local keys = { wait = KEYS[2], paused = KEYS[3], meta = KEYS[4], prioritized = KEYS[5], pc = KEYS[6],
  marker = KEYS[7], delayed = KEYS[8], events = KEYS[9] }
local dueAt = delay > 0 and tostring(now + delay) or nil
readyAfterRetry(keys, jobId, jobKey, dueAt, ARGV[5], ARGV[7])
return 1
