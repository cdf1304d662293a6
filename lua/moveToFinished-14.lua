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
-- @include emitEvent
-- @include pushReady
-- @include promoteDelayed
-- @include pickup
-- @include releaseFromActive
-- @include removeJobKeys
-- @include trimFinished

local jobId, token, now, target = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local jobKey = KEYS[13]
local code = releaseFromActive(jobKey, KEYS[14], KEYS[2], KEYS[5], jobId, token)
if code ~= 0 then return code end
local maxEvents = tonumber(ARGV[13])
if target == "completed" then
  rcall("HSET", jobKey, "finishedOn", now, "returnvalue", ARGV[5])
  emitEvent(KEYS[4], maxEvents, "completed", jobId, "returnvalue", ARGV[5])
else
  rcall("HSET", jobKey, "finishedOn", now, "failedReason", ARGV[5], "stacktrace", ARGV[6])
  emitEvent(KEYS[4], maxEvents, "failed", jobId, "failedReason", ARGV[5])
end

local prefix = ARGV[10]
local keepCount = tonumber(ARGV[7])
if keepCount == 0 then
  removeJobKeys(jobKey)
else
  rcall("ZADD", KEYS[12], now, jobId)
  if keepCount > 0 or tonumber(ARGV[8]) > 0 then
    trimFinished(KEYS[12], prefix, now, keepCount, tonumber(ARGV[8]))
  end
end

if ARGV[9] ~= "1" then return { 0, {}, 0, 0 } end
local keys = {
  wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4], stalled = KEYS[5],
  limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8], meta = KEYS[9], pc = KEYS[10],
  marker = KEYS[11]
}
return pickup(keys, prefix, ARGV[11], tonumber(ARGV[12]), now, maxEvents,
  tonumber(ARGV[14]), tonumber(ARGV[15]), false)
