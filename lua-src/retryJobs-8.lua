--[[
  retryJobs-8 · one batch of queue.retryJobs(): the finished jobs (failed or completed) that
  finished at or before a cut-off go back to ready, each as job.retry() (reprocessJob-9) sends one.

  KEYS[1] the finished set (failed or completed)  [2] wait  [3] paused  [4] meta  [5] prioritized
      [6] pc  [7] marker  [8] events
  ARGV[1] job-key prefix "P:{Q}:"  [2] count: at most this many ids a call  [3] the cut-off (ms:
      the set's score, finishedOn, at or before it)  [4] events max length
  Returns how many ids it took out of the set (those finished first); fewer than count means none
  was left at or before the cut-off. queue.retryJobs calls again while a call took count.
  Each job: finishedOn, processedOn, failedReason, stacktrace, returnvalue, a cancel's mark
  (`cxl`, cancelJob-12) and a step parent's mark of a failed child (`cfr`) removed, atm and stc
  set to 0, ats kept (the fencing number never repeats); placed with its stored priority, FIFO
  (placeReady), in paused while the queue is paused; event waiting (prev: retried, as job.retry()).
  The marker once, when a job became ready and the queue is not paused. An id without a hash is
  only taken out of the set.
]]
local rcall = redis.call
-- @include readyAgain

local prefix, maxEvents = ARGV[1], ARGV[4]
local ids = rcall("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[3], "LIMIT", "0", ARGV[2])
if #ids == 0 then return 0 end
-- The lowest scores are the lowest ranks: exactly the ids read.
rcall("ZREMRANGEBYRANK", KEYS[1], "0", tostring(#ids - 1))
readyAgain(prefix, ids, "retried", maxEvents, function(jobKey)
  rcall("HDEL", jobKey, "finishedOn", "processedOn", "failedReason", "stacktrace", "returnvalue", "cxl", "cfr")
  rcall("HSET", jobKey, "atm", "0", "stc", "0")
end)
return #ids
