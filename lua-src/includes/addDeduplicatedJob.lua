-- @include addOneJob
-- @include deduplicationHolder
-- @include emitEvent
-- @include removeJobKeys
-- addDeduplicatedJob(keys, prefix, job, now, maxEvents, paused, idPrefix): addOneJob, for a job that
-- may carry job.dedup = { id, key (P:{Q}:de:<id>), ttl (the ARGV string, "0" = none), extend, replace }
-- (docs/deduplication.md). A job without it is exactly addOneJob. keys as addOneJob's.
-- Returns jobId, outcome, ready: outcome 1 added; 0 a job with that custom id exists (nothing is
-- written); 2 deduplicated: jobId is the job that holds the id, and nothing is written but the
-- `deduplicated` event (and, with extend, the key's TTL started again). ready as addOneJob's.
-- With replace, a holder still in delayed is removed (event removed, reason "replaced by
-- deduplication") and this job takes the id in its place: outcome 1, and the `deduplicated` event
-- names this job as the one kept and the removed one as deduplicatedJobId. A holder in any other
-- state is kept, as without replace.
local function addDeduplicatedJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  local dedup = job.dedup
  if not dedup then
    local jobId, created, ready = addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
    return jobId, created and 1 or 0, ready
  end
  -- A custom id that exists answers first, as for any add: that job, nothing written.
  if job.id ~= "" and rcall("EXISTS", prefix .. job.id) == 1 then return job.id, 0, false end
  local holder = deduplicationHolder(dedup.key, prefix, dedup.id)
  local replaced = false
  if holder then
    if dedup.replace and rcall("ZREM", keys.delayed, holder) == 1 then
      replaced = holder
      removeJobKeys(prefix .. holder)
      emitEvent(keys.events, maxEvents, "removed", holder, "reason", "replaced by deduplication")
    else
      if dedup.extend then rcall("SET", dedup.key, holder, "PX", dedup.ttl) end
      -- The add takes no id (nothing is written for it), so the event names it by its custom id only.
      if job.id == "" then
        emitEvent(keys.events, maxEvents, "deduplicated", holder, "deduplicationId", dedup.id)
      else
        emitEvent(keys.events, maxEvents, "deduplicated", holder, "deduplicationId", dedup.id, "deduplicatedJobId", job.id)
      end
      return holder, 2, false
    end
  end
  local jobId, _, ready = addOneJob(keys, prefix, job, now, maxEvents, paused, idPrefix)
  rcall("HSET", prefix .. jobId, "deid", dedup.id)
  if replaced and not dedup.extend then
    rcall("SET", dedup.key, jobId, "KEEPTTL")
  elseif dedup.ttl ~= "0" then
    rcall("SET", dedup.key, jobId, "PX", dedup.ttl)
  else
    rcall("SET", dedup.key, jobId)
  end
  if replaced then
    emitEvent(keys.events, maxEvents, "deduplicated", jobId, "deduplicationId", dedup.id, "deduplicatedJobId", replaced)
  end
  return jobId, 1, ready
end
