--[[
  moveToActive-11 · pickup: take the next ready job into active and acquire its lock.

  KEYS[1] wait        [2] active   [3] prioritized  [4] events  [5] stalled  [6] limiter
      [7] delayed     [8] paused   [9] meta         [10] pc     [11] marker
  ARGV[1] job-key prefix "P:{Q}:"   [2] lock token (UUID v4, fresh for this pickup)
      [3] lockDuration ms           [4] now (ms)       [5] events max length (approximate)
      [6] rate limit: max jobs per window (0 = none)   [7] rate limit window ms
  Returns { jobId, job hash as flat field/value array, nextDelayedAt, rateLimitedForMs }
      jobId is 0 when no job was taken (empty, paused or rate limited); nextDelayedAt is the ms
      timestamp of the next delayed job (0 = none); rateLimitedForMs > 0 when the limiter is full.
  Order: due delayed jobs are promoted first; then the wait list (right end), then prioritized.
]]
local rcall = redis.call
-- @include pickupKeys
-- @include pickup

return pickup(pickupKeys(), ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7], true)
