--[[
  moveToActiveBounded-11 · pickup, as moveToActive-11, unless the queue already holds `maxActive`
  jobs in active: a partitioned queue's partitionConcurrency (docs/protocol.md, "Partitioned
  queues"), the bound every worker of the queue checks here, so it holds across processes.

  KEYS as moveToActive-11: [1] wait  [2] active  [3] prioritized  [4] events  [5] stalled
      [6] limiter  [7] delayed  [8] paused  [9] meta  [10] pc  [11] marker
  ARGV as moveToActive-11 ([1] job-key prefix  [2] lock token  [3] lockDuration ms  [4] now (ms)
      [5] events max length  [6] rate limit max (0 = none)  [7] rate limit window ms), then
      [8] maxActive: take nothing while active holds this many jobs (or more)
  Returns { jobId, job hash, nextDelayedAt, rateLimitedForMs } as moveToActive-11, with a fifth
      element 1 when nothing was taken because active is full (0 otherwise). Due delayed jobs are
      promoted either way, so nextDelayedAt stays true.
  A job in active counts until it leaves active: a finish, a retry, or the stalled sweep.
]]
local rcall = redis.call
-- @include pickupKeys
-- @include promoteDelayed
-- @include pickup

local keys = pickupKeys()
if rcall("LLEN", keys.active) >= tonumber(ARGV[8]) then
  local nextDelayed = promoteDelayed(keys, ARGV[1], tonumber(ARGV[4]), ARGV[5])
  return { 0, {}, nextDelayed, 0, 1 }
end
local reply = pickup(keys, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7], true)
reply[5] = 0
return reply
