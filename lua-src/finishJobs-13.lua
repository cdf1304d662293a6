--[[
  finishJobs-13 · the batch form of moveToFinished-14, as extendLocks-1 is of extendLock-2: finish
  several jobs of one worker in one call, each with moveToFinished-14's checks and writes, then
  take the next job for each finish that asked for one (fetch-next).

  KEYS[1] wait     [2] active   [3] prioritized  [4] events  [5] stalled  [6] limiter
      [7] delayed  [8] paused   [9] meta         [10] pc     [11] marker
      [12] completed           [13] failed
  ARGV[1] job-key prefix "P:{Q}:"   [2] now (ms): the pickups' time   [3] events max length
      [4] lockDuration ms   [5] rate limit max (0 = none)   [6] rate limit window ms
      [7..] nine fields per job: jobId, token, "completed", "failed" or "retried",
            returnvalue (JSON) when completed or failedReason when failed or retried,
            stacktrace (JSON array, "" when completed), keep count (-1 = all, 0 = remove now;
            when retried: the retry's delay in ms, 0 = back to ready now),
            keep age ms (0 = any), next lock token ("" = take no next job),
            finishedOn (ms: when that job's handler ended, its score in completed or failed;
            when retried with a delay, the delay counts from it)
  Returns { results, nextDelayedAt, rateLimitedForMs }. results holds three entries per job, in
      ARGV order: the finish's code (0 done; -1, -2, -6 or -3 as moveToFinished-14 answers them,
      and then that job is left as it was), the next job's id or 0, the next job's hash (flat,
      ats and processedOn last: as one JSON string, cjson.encode of the array, when its fields and
      values hold 2,048 bytes or less; else the flat array itself) or {}. nextDelayedAt and rateLimitedForMs are those of the
      pickups (0 when no job asked for a next one).
  Why a batch: at concurrency > 1 jobs finish in bursts; one call per burst saves a script call,
  a round trip's encoding and a socket write per job, on both sides. The delayed-job check and
  the pause check run once per call, and the lock DELs, the stalled SREMs, the finished-set
  ZADDs and the pops from wait are one command each per call (deferred.lua, takeNextJobs).
  Every job keeps its own lock check: one job's -6 changes nothing for the others. A job whose
  finish failed takes no next job.
  Retried: a failed attempt with attempts left, as retryJob-12 takes it (its lock check and codes,
  atm counted, failedReason and stacktrace written, the same events), and it takes its next job
  like a finish. It goes back to ready or delayed after the call's pickups, so that no fetch-next
  of this call takes it straight back; a worker's retries then cost one batched call, not a
  retryJob-12 and a moveToActive-11 each.
  Keep rules: a job removed now writes no outcome nor atm to its hash, and its hash and logs join the
  call's one DEL; a count rule alone runs once per set and call (ZCARD, ZPOPMIN, one DEL), which
  leaves what one finish after another would (docs/protocol.md, Batches).
  The job's hash and lock keys are built from the prefix (like extendLocks-1 does): they carry
  the queue's {Q} hash tag, so they live in the slot of the declared KEYS.
]]
local rcall = redis.call
-- @include pickupKeys
-- @include finishBatch

return finishBatch(pickupKeys(), KEYS[12], KEYS[13], 7, nil)
