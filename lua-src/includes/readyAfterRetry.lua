-- @include emitEvent
-- @include pushReady
-- readyAfterRetry(keys, jobId, jobKey, dueAt, failedReason, maxEvents): the way back of a failed
-- attempt whose lock was released for a retry (retryJob-12; finishJobs-13's target "retried").
-- With dueAt (ms, a string: formatted once for its three writes) it goes to delayed and the marker
-- is told when, with an event delayed; without, back to ready (pushReady: wait, prioritized or
-- paused by its stored priority, the marker set), with an event waiting (prev failed). keys holds
-- wait, paused, meta, prioritized, pc, marker, delayed and events; maxEvents false leaves the
-- events stream's trim to the caller.
local function readyAfterRetry(keys, jobId, jobKey, dueAt, failedReason, maxEvents)
  if dueAt then
    rcall("ZADD", keys.delayed, dueAt, jobId)
    rcall("ZADD", keys.marker, dueAt, "1")
    emitEvent(keys.events, maxEvents, "delayed", jobId, "delay", dueAt, "failedReason", failedReason)
  else
    pushReady(keys, jobId, tonumber(rcall("HGET", jobKey, "priority")) or 0, false)
    emitEvent(keys.events, maxEvents, "waiting", jobId, "prev", "failed", "failedReason", failedReason)
  end
end
