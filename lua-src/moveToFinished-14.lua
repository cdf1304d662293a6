--[[
  moveToFinished-14 · verify the lock, finish the job (completed or failed), release the lock,
  and optionally take the next job in the same call (fetch-next).

  KEYS[1] wait     [2] active   [3] prioritized  [4] events  [5] stalled  [6] limiter
      [7] delayed  [8] paused   [9] meta         [10] pc     [11] marker
      [12] target set (completed or failed)      [13] the job's hash      [14] the job's lock
  ARGV[1] jobId    [2] token    [3] now (ms)     [4] "completed" or "failed"
      [5] returnvalue (JSON) when completed, failedReason when failed
      [6] stacktrace (JSON array) when failed, "" otherwise
      [7] keep count in the target set (-1 = all, 0 = remove the job now)  [8] keep age ms (0 = any)
      [9] fetch next: "1" or "0"   [10] job-key prefix "P:{Q}:"   [11] next lock token
      [12] lockDuration ms         [13] events max length
      [14] rate limit max (0 = none)   [15] rate limit window ms
  Returns -1 (no job), -2 (no lock), -6 (another token), -3 (not in active): nothing changed.
      Otherwise the pickup result of moveToActive-11 for the next job ({0, {}, ...} when none was
      asked for or none was ready).
]]
local rcall = redis.call
-- @include pickupKeys
-- @include deferred
-- @include finishJob
-- @include pickup

local now, prefix, maxEvents = ARGV[3], ARGV[10], ARGV[13]
local keys = pickupKeys()
local job = { key = KEYS[13], lockKey = KEYS[14], id = ARGV[1], token = ARGV[2], target = ARGV[4],
  value = ARGV[5], stacktrace = ARGV[6], keepCount = tonumber(ARGV[7]), keepAgeMs = tonumber(ARGV[8]) }
local finished = newDeferred()
local code = finishJob(keys, job, KEYS[12], prefix, now, maxEvents, finished)
if code ~= 0 then return code end
applyDeferred(keys.stalled, finished)

if ARGV[9] ~= "1" then return { 0, {}, 0, 0 } end
return pickup(keys, prefix, ARGV[11], ARGV[12], now, maxEvents, tonumber(ARGV[14]), ARGV[15], false)
