-- @include emitEvent
-- @include deferred
-- @include releaseFromActive
-- @include removeJobKeys
-- @include trimFinished
-- finishJob(keys, job, targetKey, prefix, now, maxEvents, deferred): the finishing step of
-- moveToFinished-14 and of each job of finishJobs-13. Verifies and releases the lock
-- (releaseFromActive), stores the outcome, emits completed or failed, then keeps the job in the
-- target set or removes it (removeOnComplete / removeOnFail).
-- keys: { active, events }. job: { key, lockKey, id, token, target, value, stacktrace,
-- keepCount, keepAgeMs }: target is "completed" (value = returnvalue JSON) or "failed" (value =
-- failedReason, stacktrace = JSON array); keepCount -1 keeps all, 0 removes the job now.
-- now and maxEvents are the ARGV strings, written as they are (maxEvents false: see emitEvent).
-- Returns 0, or the code of releaseFromActive (-1, -2, -6, -3) with nothing changed.
local function finishJob(keys, job, targetKey, prefix, now, maxEvents, deferred)
  local code = releaseFromActive(job.key, job.lockKey, keys.active, job.id, job.token, deferred)
  if code ~= 0 then return code end
  if job.target == "completed" then
    rcall("HSET", job.key, "finishedOn", now, "returnvalue", job.value)
    emitEvent(keys.events, maxEvents, "completed", job.id, "returnvalue", job.value)
  else
    rcall("HSET", job.key, "finishedOn", now, "failedReason", job.value, "stacktrace", job.stacktrace)
    emitEvent(keys.events, maxEvents, "failed", job.id, "failedReason", job.value)
  end
  if job.keepCount == 0 then
    removeJobKeys(job.key)
  elseif job.keepCount > 0 or job.keepAgeMs > 0 then
    -- The trim reads the set: it must see every job finished so far, this one included.
    flushZadd(deferred, targetKey)
    rcall("ZADD", targetKey, now, job.id)
    trimFinished(targetKey, prefix, now, job.keepCount, job.keepAgeMs)
  else
    deferZadd(deferred, targetKey, now, job.id)
  end
  return 0
end
