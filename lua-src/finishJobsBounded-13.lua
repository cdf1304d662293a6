--[[
  finishJobsBounded-13 · finishJobs-13 on a queue with a queue-wide concurrency
  (Queue.setGlobalConcurrency, the `concurrency` field of meta): the same finishes, and fetch-next
  takes no more jobs than active has room for under the bound once the call's finishes left it.

  KEYS as finishJobs-13: [1] wait  [2] active  [3] prioritized  [4] events  [5] stalled
      [6] limiter  [7] delayed  [8] paused  [9] meta  [10] pc  [11] marker  [12] completed
      [13] failed
  ARGV[1..6] as finishJobs-13 (job-key prefix, now, events max length, lockDuration, rate limit
      max (0 = none), rate limit window ms), then
      [7] maxActive: the bound; fetch-next leaves active holding at most this many jobs
      [8..] nine fields per job, as finishJobs-13's ARGV[7..]
  Returns as finishJobs-13: { results, nextDelayedAt, rateLimitedForMs }. A finish whose
      fetch-next found no room gets no next job (0, {}), like one that found no ready job.
  Why a script of its own: moveToFinished-14 (fixed) takes a next job without looking at active,
  which never grows active but keeps it at an old, higher bound after the bound was lowered. A
  worker of a bounded queue sends every finish here, one job or many: the same one call per finish.
  After the pickups, while active has room and ready work is left (not paused, not rate limited),
  it sets the ready marker (ZADD marker 0 "0"): a worker blocked on the marker because active was
  full learns a slot freed instead of waiting drainDelay. Only bounded queues pay for the check.
]]
local rcall = redis.call
-- @include pickupKeys
-- @include finishBatch

return finishBatch(pickupKeys(), KEYS[12], KEYS[13], 8, tonumber(ARGV[7]))
