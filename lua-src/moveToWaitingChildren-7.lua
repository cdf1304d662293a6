--[[
  moveToWaitingChildren-7 · job.moveToWaitingChildren(): the handler of an active job that added
  children (a step job) waits for them: the job leaves active for waiting-children and gives up
  its lock, and settleChildren-12 starts it again once its last dependency is settled. When there
  is nothing to wait for (every child already settled, or the named child is not a dependency),
  nothing changes and the handler goes on.

  KEYS[1] active   [2] stalled   [3] waiting-children   [4] events   [5] the job's hash
      [6] the job's lock   [7] the job's dependencies set
  ARGV[1] jobId   [2] token   [3] now (ms)   [4] events max length
      [5] a child's job key to wait for ("" = any unsettled child)
  Returns 1 moved; 0 nothing to wait for (nothing changed); -1 no job, -2 no lock, -6 another
      token holds it, -3 not in active: nothing changed; a string, the job's cfr, when a child
      failed with failParentOnFailure while it ran (settleChildren-12): nothing changed, and the
      runtime fails the job with that reason (it must not wait for children that cannot all come).
  The checks are releaseUncounted's, in its order, before any write; so is the release (the lock
  DELeted, the id SREMed from stalled), the attempt not counted (a job of many steps does not use
  up its attempts). Its `delay` is set to 0: settleChildren-12 starts a parent after its delay, and
  a step job that comes back is due at once. A child that failed with no policy stays a
  dependency (docs/flows.md), so a job waiting for it waits until it is retried and settles.
  Both this and every settle run in the job's slot, so a child settling meanwhile is either seen
  here (and the job goes on) or starts the job from waiting-children: no wake-up is lost.
  Event: waiting-children.
]]
local rcall = redis.call
-- @include emitEvent

local jobKey, lockKey, jobId, token = KEYS[5], KEYS[6], ARGV[1], ARGV[2]
if rcall("EXISTS", jobKey) == 0 then return -1 end
local holder = rcall("GET", lockKey)
if not holder then return -2 end
if holder ~= token then return -6 end
if not rcall("LPOS", KEYS[1], jobId) then return -3 end
local childFailed = rcall("HGET", jobKey, "cfr")
if childFailed then return childFailed end
local child = ARGV[5]
local waits
if child == "" then
  waits = rcall("SCARD", KEYS[7]) > 0
else
  waits = rcall("SISMEMBER", KEYS[7], child) == 1
end
if not waits then return 0 end
rcall("LREM", KEYS[1], "-1", jobId)
rcall("DEL", lockKey)
rcall("SREM", KEYS[2], jobId)
rcall("HSET", jobKey, "delay", "0", "fch", "1")
rcall("ZADD", KEYS[3], ARGV[3], jobId)
emitEvent(KEYS[4], ARGV[4], "waiting-children", jobId)
return 1
