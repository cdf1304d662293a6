--[[
  finishFlowJobs-15 · the batch form of finishFlowJob-8, with fetch-next: finish several jobs of
  flows (children, or parents with flow keys) of one worker in one call, each with
  moveToFinished-14's checks and writes, and what finishFlowJob-8 adds to them: a child leaves a
  notice for its parent (KEYS[14] notices: child id -> when, KEYS[15] notice-data: child id ->
  JSON [parentKey, outcome, value, policy]: the child's `pfp`, or "remove" for a child that failed
  with none and is removed at its finish, so its parent goes on without it); a job removed at its finish takes its flow keys with
  it, and a count or age rule (removeOnComplete / removeOnFail) drops older jobs with their flow
  keys (includes/trimFinishedFlow.lua). Then it takes the next job for each finish that asked for one (fetch-next), as finishJobs-13.

  KEYS[1] wait     [2] active   [3] prioritized  [4] events  [5] stalled  [6] limiter
      [7] delayed  [8] paused   [9] meta         [10] pc     [11] marker
      [12] completed           [13] failed      [14] notices [15] notice-data
  ARGV[1] job-key prefix "P:{Q}:"   [2] now (ms): the pickups' time   [3] events max length
      [4] lockDuration ms   [5] rate limit max (0 = none)   [6] rate limit window ms
      [7] maxActive: a queue-wide concurrency, as finishJobsBounded-13's ("" = none)
      [8..] nine fields per job, as finishJobs-13's but never "retried" (jobId, token, "completed" or "failed",
            returnvalue or failedReason, stacktrace, keep count, keep age ms, next lock token
            or "", finishedOn: also the notice's time)
  Returns { results, nextDelayedAt, rateLimitedForMs }, as finishJobs-13: per job its code (0;
      -1, -2, -6 or -3 and then that job is left as it was, no notice written), the next job's
      id or 0, its hash or {}.
  Why: a child finished by finishFlowJob-8 costs a script call of its own and, without fetch-next,
  a pickup (moveToActive-11) from the worker's one fetch loop: at concurrency 10 the children ran
  a round trip apart. Only a final outcome comes here: a failure that will be retried goes to
  retryJob-12. The notice is settled in the parent's slot next (settleChildren-12), as after
  finishFlowJob-8. The job, lock and flow keys are built from the prefix (as finishJobs-13's).
]]
local rcall = redis.call
-- @include pickupKeys
-- @include finishBatch
-- @include flowParent
-- @include trimFinishedFlow

return finishBatch(pickupKeys(), KEYS[12], KEYS[13], 8, tonumber(ARGV[7]),
  { notices = KEYS[14], noticeData = KEYS[15], keysOf = function(jobKey) return flowKeysOf(jobKey) end,
    trim = function(...) return trimFinishedFlow(...) end, policyOf = function(...) return noticePolicy(...) end })
